// Every test program's main: doctest's, with two rules CTest cannot see for itself.
// - A test case that ran and asserted nothing fails: it could not have failed.
// - A program whose selected test cases were all skipped (doctest::skip, decided where the case
//   is declared: no stub driver, no confinement on this kernel) exits 77, which tests/
//   CMakeLists.txt gives CTest as SKIP_RETURN_CODE, so CTest reports it as skipped, not passed.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Tally {
    int ran = 0;
    int skipped = 0;
    std::vector<std::string> without_asserts;
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
        if (data.m_skip) {
            ++tally().skipped;
            std::printf("skipped: %s\n", data.m_name);
        }
    }

private:
    std::string name_;
};

}  // namespace

REGISTER_LISTENER("tally", 1, TallyListener);

int main(int argc, char** argv) {
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
