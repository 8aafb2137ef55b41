"""The `torch` backend: each gradient operator through PyTorch, on the CPU or a CUDA device.

Every operator is computed by PyTorch, never by the NumPy reference: autograd of the forward operator
where PyTorch has one (relu, hardtanh, slicing views, max_pool2d/3d, 1-D upsamples) and the forward
written with PyTorch tensors otherwise (`dmlconform.backends.torch_grads` says which, per operator). Data
stays in its own type on the device (FLOAT16 is computed in float16 on CUDA), so the results, and their
ULP spread, are the device's. Descriptions are checked with the operator's documented rules first:
refusing an invalid description is the same decision on every backend, not a numeric oracle.

torch is an optional extra (`pip install "dmlconform[torch]"`): it is imported by the factory, never when
this module is imported, and a missing torch is one line at start-up.
"""

from __future__ import annotations

import platform
import re
from types import ModuleType

from dmlconform.backends import register
from dmlconform.backends.base import BackendInfo, BackendOptions, Outcome, one_line, unexpressed
from dmlconform.case import Case
from dmlconform.feature_levels import HIGHEST
from dmlconform.ops.average_pooling_grad import AVERAGE_POOLING_GRAD
from dmlconform.ops.base import DescriptionError
from dmlconform.ops.resample_grad import RESAMPLE_GRAD, reading

NAME = "torch"
#: The only reference variants the torch backend can follow (ResampleGrad1's offsets, ResampleGrad v0's readings,
#: AveragePoolingGrad's divisors where avg_pool can express them); every other undocumented behaviour is PyTorch's own.
VARIANTS = tuple(dict.fromkeys(("swapped", "literal", *RESAMPLE_GRAD.variants, *AVERAGE_POOLING_GRAD.variants)))
#: Which candidate PyTorch follows for each undocumented behaviour (docs/reference/operators.md), by behaviour name;
#: `crosscheck` uses it to explain a case whose candidates do not include it.
READINGS = {
    "relu-nan-input": "nan-passes",
    "clip-nan-input": "nan-passes",
    "maxpool-nan-input": "nan-wins-last",
    "maxpool-padding-only-window": "dropped",
    "resample-linear-zero-weight-nonfinite": "zero-weights-read",
}
#: Exception texts that mean "this build or device has no kernel for that", not "something broke".
CAPABILITY_GAPS = ("not implemented for", "no kernel", "not supported", "unsupported")

_DEVICE = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


def choose_device(requested: str, cuda_available: bool, cuda_count: int) -> str:
    """The torch device string for `--device requested`; RuntimeError (one line) if it cannot be used."""
    match = _DEVICE.match(requested.strip().lower())
    if match is None:
        raise RuntimeError(f"--device {requested}: unknown (use cpu, cuda or cuda:N)")
    kind, index = match.group(1), match.group(2)
    if kind == "cpu":
        if index is not None:
            raise RuntimeError(f"--device {requested}: the CPU has no index (use cpu)")
        return "cpu"
    if not cuda_available or cuda_count == 0:
        raise RuntimeError(f"--device {requested}: this torch has no usable CUDA device (a CPU-only build, or no "
                           "driver); pip install a CUDA build of torch, or use --device cpu")
    number = int(index or 0)
    if number >= cuda_count:
        raise RuntimeError(f"--device {requested}: there are {cuda_count} CUDA device(s), numbered 0 to "
                           f"{cuda_count - 1}")
    return f"cuda:{number}"


def classify_failure(exc: BaseException, device: str) -> Outcome:
    """A missing kernel becomes NOT_SUPPORTED with PyTorch's reason; anything else an ERROR with the message."""
    from dmlconform.backends.torch_grads import TorchUnsupported

    message = one_line(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, TorchUnsupported | NotImplementedError) or any(gap in message.lower()
                                                                       for gap in CAPABILITY_GAPS):
        return Outcome.not_supported(f"PyTorch on {device} cannot run this case: {message}")
    return Outcome.error(f"PyTorch failed on {device}: {message}")


class TorchBackend:
    name = NAME
    #: PyTorch operators may be called from several threads; nothing is cached between cases.
    thread_safe = True

    def __init__(self, torch: ModuleType, device: str, variant: str | None = None) -> None:
        self.torch = torch
        self.device = torch.device(device)
        #: Reading of ResampleGrad1's offsets (docs/reference/operators.md); the other behaviours are PyTorch's own.
        self.variant = variant

    @property
    def readings(self) -> dict[str, str]:
        """The candidate PyTorch follows for each undocumented behaviour, by behaviour name."""
        v0 = reading(self.variant)
        divisor = self.variant if self.variant in AVERAGE_POOLING_GRAD.variants else AVERAGE_POOLING_GRAD.variants[0]
        return {**READINGS, "resample-offset-convention": v0.offsets,
                "resample-v0-nearest-rounding": v0.rounding, "resample-v0-linear-edges": v0.edges,
                "avgpool-asymmetric-padding": divisor, "avgpool-divisor": divisor}

    def info(self) -> BackendInfo:
        torch = self.torch
        version = f"torch {torch.__version__}"
        extra: dict[str, str] = {"torch": torch.__version__, "torch_device": str(self.device),
                                 "float16": "computed in float16 on the device (no upcast)",
                                 "readings": ", ".join(f"{k}={v}" for k, v in READINGS.items())}
        if self.device.type == "cuda":
            props = torch.cuda.get_device_properties(self.device)
            capability = f"sm_{props.major}{props.minor}"
            version += f", CUDA {torch.version.cuda}"
            device = f"{self.device} ({props.name}, {capability}, CUDA {torch.version.cuda})"
            extra.update(cuda=str(torch.version.cuda), gpu=props.name, capability=capability,
                         tf32_matmul=str(torch.backends.cuda.matmul.allow_tf32))
        else:
            device = f"cpu ({platform.machine() or 'cpu'}, {torch.get_num_threads()} threads)"
        extra["offsets"] = self.variant or VARIANTS[0]
        return BackendInfo(NAME, version, device, HIGHEST,
                           "PyTorch realises every operator at every level (autograd of the forward operator "
                           "where PyTorch has one)", extra)

    def run(self, case: Case) -> Outcome:
        surface = unexpressed(case, "PyTorch")
        if surface is not None:
            return surface
        try:
            case.op.validate(case.description)
        except DescriptionError as exc:
            return Outcome.refused(str(exc))
        from dmlconform.backends.torch_grads import realise

        try:
            output = realise(case.description, case.inputs, self.device, self.variant)
        except Exception as exc:
            return classify_failure(exc, str(self.device))
        return Outcome.ran({case.op.outputs[0]: output})

    def close(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)


def import_torch() -> ModuleType:
    try:
        import torch
    except ImportError as exc:
        raise RuntimeError(f"torch cannot be imported ({exc}); pip install \"dmlconform[torch]\"") from None
    return torch


@register(NAME)
def create(options: BackendOptions) -> TorchBackend:
    if options.variant is not None and options.variant not in VARIANTS:
        raise RuntimeError(f"--variant {options.variant}: the torch backend follows PyTorch's own readings of "
                           f"undocumented behaviour; only {', '.join(VARIANTS)} (ResampleGrad1's offsets, "
                           "ResampleGrad's readings, AveragePoolingGrad's divisors) apply")
    torch = import_torch()
    cuda = torch.cuda.is_available()
    device = choose_device(options.device, cuda, torch.cuda.device_count() if cuda else 0)
    return TorchBackend(torch, device, options.variant)

