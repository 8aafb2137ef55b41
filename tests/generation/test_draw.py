import hashlib

import numpy as np

from dmlconform.generation.draw import AHEAD, Draw, shape_for


def test_a_draw_depends_only_on_its_seed_and_key():
    a, b = Draw(7, 1, 2), Draw(7, 1, 2)
    assert a.raw(4).tolist() == b.raw(4).tolist()
    assert Draw(7, 1, 3).raw(4).tolist() != Draw(7, 1, 2).raw(4).tolist()


def test_streams_are_pinned():
    """A change here means every generated suite changes its data: the seeding or the bit stream moved."""
    words = Draw(1100, 2, 1, 0).raw(8)
    assert hashlib.sha256(words.tobytes()).hexdigest()[:16] == \
        hashlib.sha256(np.random.PCG64([1100, 2, 1, 0]).random_raw(8).tobytes()).hexdigest()[:16]
    assert Draw(0).raw(1)[0] == np.random.PCG64([0]).random_raw(1)[0]


def test_words_taken_ahead_are_used_in_stream_order():
    """below() takes its words from the stream AHEAD at a time: any mix of below() and raw() gives what taking each
    word as it is needed gives (the generated suites depend on it byte for byte)."""
    rng = np.random.default_rng(5)
    for trial in range(300):
        draw, stream = Draw(trial, 3), np.random.PCG64([trial, 3])
        for _ in range(int(rng.integers(0, 3 * AHEAD))):
            if rng.random() < 0.1:
                count = int(rng.choice([0, 1, 2, AHEAD - 1, AHEAD, AHEAD + 1, 3 * AHEAD]))
                words = draw.raw(count)
                assert words.dtype == np.uint64 and words.tolist() == stream.random_raw(count).tolist()
            elif rng.random() < 0.1:  # a shuffle takes a word a swap, as a below(i + 1) each would
                items = list(range(int(rng.choice([0, 1, 2, 5, AHEAD, AHEAD + 3]))))
                expected = list(items)
                for i in range(len(items) - 1, 0, -1):
                    j = int(stream.random_raw()) % (i + 1)
                    expected[i], expected[j] = expected[j], expected[i]
                assert draw.shuffled(items) == expected
            elif rng.random() < 0.1:  # fraction() is unit(1)[0], from the next word of the stream
                expected = float((np.array([stream.random_raw()], dtype=np.uint64) >> np.uint64(11))
                                 .astype(np.float64)[0] * 2.0**-53)
                assert draw.fraction() == expected
            else:
                bound = int(rng.choice([1, 3, 1000, 2**40]))
                assert draw.below(bound) == int(stream.random_raw()) % bound


def test_choices_stay_in_range_and_shuffles_are_permutations():
    draw = Draw(3)
    assert {draw.below(5) for _ in range(200)} == set(range(5))
    assert {draw.between(-2, 2) for _ in range(200)} == set(range(-2, 3))
    items = list(range(20))
    shuffled = draw.shuffled(items)
    assert sorted(shuffled) == items and shuffled != items
    units = draw.unit(1000)
    assert units.min() >= 0 and units.max() < 1


def test_shapes_keep_the_rank_and_the_element_limit():
    for rank in range(1, 9):
        for limit in (1, 7, 100, 5000):
            shape = shape_for(Draw(rank, limit), rank, limit)
            assert len(shape) == rank and all(d >= 1 for d in shape)
            assert int(np.prod(shape)) <= limit
