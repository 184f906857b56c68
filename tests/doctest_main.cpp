// Every test program's main: doctest's, with two rules CTest cannot see for itself.
// - A test case that ran and asserted nothing fails: it could not have failed.
// - A program whose selected test cases were all skipped (doctest::skip, decided where the case
//   is declared: no stub driver, no confinement on this kernel) exits 77, which tests/
//   CMakeLists.txt gives CTest as SKIP_RETURN_CODE, so CTest reports it as skipped, not passed.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Tally {
    int ran = 0;
    int skipped = 0;
    std::vector<std::string> without_asserts;
    // The suites the command line selects or leaves out (--test-suite=, --test-suite-exclude=, as
    // tests/CMakeLists.txt passes them): a case skipped in a suite not selected is not counted.
    std::set<std::string> suites;
    std::set<std::string> excluded_suites;

    bool selected(const std::string& suite) const {
        return (suites.empty() || suites.count(suite) > 0) && excluded_suites.count(suite) == 0;
    }
};

Tally& tally() {
    static Tally instance;
    return instance;
}

class TallyListener : public doctest::IReporter {
public:
    explicit TallyListener(const doctest::ContextOptions&) {}

    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {}
    void test_case_start(const doctest::TestCaseData& data) override { name_ = data.m_name; }
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
        ++tally().ran;
        if (stats.numAssertsCurrentTest == 0 && stats.testCaseSuccess) {
            tally().without_asserts.push_back(name_);
        }
    }
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData& data) override {
        // doctest also calls this for cases its filters leave out; only doctest::skip counts.
        if (data.m_skip && tally().selected(data.m_test_suite)) {
            ++tally().skipped;
            std::printf("skipped: %s\n", data.m_name);
        }
    }

private:
    std::string name_;
};

void read_suites(const std::string& argument, const std::string& option,
                 std::set<std::string>& into) {
    if (argument.rfind(option, 0) != 0) {
        return;
    }
    std::stringstream list(argument.substr(option.size()));
    for (std::string suite; std::getline(list, suite, ',');) {
        into.insert(suite);
    }
}

}  // namespace

REGISTER_LISTENER("tally", 1, TallyListener);

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        read_suites(argv[i], "--test-suite=", tally().suites);
        read_suites(argv[i], "--test-suite-exclude=", tally().excluded_suites);
    }
    doctest::Context context(argc, argv);
    const int result = context.run();
    if (context.shouldExit()) {
        return result;
    }
    for (const std::string& name : tally().without_asserts) {
        std::printf("error: the test case \"%s\" ran and asserted nothing\n", name.c_str());
    }
    if (result != 0 || !tally().without_asserts.empty()) {
        return 1;
    }
    if (tally().ran == 0 && tally().skipped > 0) {
        std::printf("every selected test case was skipped: exit 77 (CTest: skipped)\n");
        return 77;
    }
    return 0;
}
