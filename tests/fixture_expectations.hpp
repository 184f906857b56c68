#pragma once

// What the fixture tests share: reading expected.yaml, and the seed a fixture needs.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "checks/checks.hpp"

namespace grader::testing {

inline std::vector<std::string> strings(const YAML::Node& node) {
    std::vector<std::string> out;
    if (node && node.IsSequence()) {
        for (const auto& item : node) {
            out.push_back(item.as<std::string>());
        }
    }
    return out;
}

// A fixed seed, or the first one whose unnamed strides include one the fixture asks for
// (stride-sniffing shows only at a stride whose degree is not 1).
inline std::uint64_t seed_for(const Exercise& exercise, const YAML::Node& expected) {
    const auto wanted = expected["seed_must_draw_any_of"];
    if (!wanted) {
        return 20261202;
    }
    std::vector<int> strides;
    for (const auto& s : wanted) {
        strides.push_back(s.as<int>());
    }
    for (std::uint64_t seed = 1;; ++seed) {
        const auto drawn = draw_unnamed_strides(exercise, seed);
        if (std::any_of(drawn.begin(), drawn.end(), [&](int s) {
                return std::find(strides.begin(), strides.end(), s) != strides.end();
            })) {
            return seed;
        }
    }
}

}  // namespace grader::testing
