#pragma once

// Where one device-server session's time went (device_server.hpp), as the server tells its batch:
// one JSON object a line on its message pipe, summed per GPU for the batch's last words.

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace grader {

// The lock held from the grade's acquire to its release, of which answering each kind of request
// ("run", "time", "count", "load", ...) and waiting for the grade's next request (its worker's
// CPU work and the transfers).
struct SessionAccount {
    double held_seconds = 0.0;
    double waiting_seconds = 0.0;
    std::map<std::string, double> request_seconds;
    // waiting_seconds by the request that ended each wait: what the worker did in between.
    std::map<std::string, double> waiting_before;
    // Outside the time held: the server idle before the session (no grade had asked for the
    // GPU), setting it up (the grade's first message, its device, the lock), and ending it.
    double idle_seconds = 0.0;
    double setup_seconds = 0.0;
    double teardown_seconds = 0.0;

    // Adds another's figures to these (a server's sessions, summed).
    void add(const SessionAccount& other);
};

// {"type": "session", "held_seconds": ..., ...}
nlohmann::json session_account_json(const SessionAccount& account);
// What is not a number reads as nothing: a batch does not stop over an account.
SessionAccount session_account_of(const nlohmann::json& j);

}  // namespace grader
