#include "device/session_account.hpp"

#include <utility>

namespace grader {

void SessionAccount::add(const SessionAccount& other) {
    held_seconds += other.held_seconds;
    waiting_seconds += other.waiting_seconds;
    for (const auto& [op, seconds] : other.request_seconds) {
        request_seconds[op] += seconds;
    }
    for (const auto& [op, seconds] : other.waiting_before) {
        waiting_before[op] += seconds;
    }
    idle_seconds += other.idle_seconds;
    setup_seconds += other.setup_seconds;
    teardown_seconds += other.teardown_seconds;
}

nlohmann::json session_account_json(const SessionAccount& account) {
    return {{"type", "session"},
            {"held_seconds", account.held_seconds},
            {"waiting_seconds", account.waiting_seconds},
            {"request_seconds", account.request_seconds},
            {"waiting_before", account.waiting_before},
            {"idle_seconds", account.idle_seconds},
            {"setup_seconds", account.setup_seconds},
            {"teardown_seconds", account.teardown_seconds}};
}

SessionAccount session_account_of(const nlohmann::json& j) {
    const auto seconds_at = [](const nlohmann::json& value) {
        return value.is_number() ? value.get<double>() : 0.0;
    };
    SessionAccount account;
    if (!j.is_object()) {
        return account;
    }
    const std::pair<const char*, double*> totals[] = {
        {"held_seconds", &account.held_seconds},
        {"waiting_seconds", &account.waiting_seconds},
        {"idle_seconds", &account.idle_seconds},
        {"setup_seconds", &account.setup_seconds},
        {"teardown_seconds", &account.teardown_seconds}};
    for (const auto& [key, into] : totals) {
        if (const auto found = j.find(key); found != j.end()) {
            *into = seconds_at(*found);
        }
    }
    // Kept in a variable while ranged over: items() of a temporary reads it after its end.
    const auto by_op = [&j, &seconds_at](const char* key, std::map<std::string, double>& into) {
        if (const auto found = j.find(key); found != j.end() && found->is_object()) {
            for (const auto& [op, seconds] : found->items()) {
                into[op] = seconds_at(seconds);
            }
        }
    };
    by_op("request_seconds", account.request_seconds);
    by_op("waiting_before", account.waiting_before);
    return account;
}

}  // namespace grader
