// host.h - what main() owns for the whole process and hands to every request.
#pragma once

#include "runtime.h"
#include "server.h"
#include "session.h"

struct Host {
    dmlh::Server server;   // replies: the real stdout (server.h)
    Runtime rt;            // options in rt.opt
    CachedSession cached;  // the last model's session (session.h)
};
