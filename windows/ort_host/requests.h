// requests.h - one run_model request: its tensors decoded, the model's session run, the outputs answered.
#pragma once

#include <string>

#include "protocol.h"

struct Host;

void handle_run_model(Host& host, dmlh::Frame& frame, const std::string& id);
