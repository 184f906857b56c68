// `grader lti`: `grader serve` as an LTI 1.3 tool of a course's LMS (docs/lti.md). `tool` prints
// what the LMS's administrator registers (the tool's URLs and public key, or Canvas's developer
// key JSON); `platform add` registers the LMS here with what it shows back (its issuer, this
// tool's client_id and deployment id, its endpoints); `platform list` and `platform remove`.

#include <errno.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "serve/lti.hpp"
#include "serve/lti_jwt.hpp"
#include "serve/lti_store.hpp"
#include "serve/store.hpp"
#include "text/text_safety.hpp"

namespace grader::cli {
namespace {

struct LtiCommandOptions {
    std::filesystem::path state = "grader-serve";
    std::string url;  // the tool's public URL
    std::string format = "text";
    serve::LtiPlatform platform;
    std::string moodle;  // a Moodle's address: its issuer and endpoints
    std::string title = "GPU self-check";
};

// The state folder's database, made where missing (as `grader tokens` does), with LTI's tables.
std::unique_ptr<serve::LtiStore> open_lti_store(const std::filesystem::path& state) {
    if (::mkdir(state.c_str(), 0700) != 0 && errno != EEXIST) {
        throw serve::StoreError("the state folder " + text::visible_line(state.string()) +
                                " cannot be created: " + std::strerror(errno));
    }
    { serve::Store made(state / "state.sqlite"); }
    return std::make_unique<serve::LtiStore>(state / "state.sqlite");
}

std::string without_final_slash(std::string url) {
    while (!url.empty() && url.back() == '/') {
        url.pop_back();
    }
    return url;
}

int run_tool(const LtiCommandOptions& options) {
    const std::string url = without_final_slash(options.url);
    const nlohmann::json jwk = serve::lti::public_jwk(serve::tool_private_key(options.state));
    if (options.format == "canvas") {
        // Canvas's developer key, "Paste JSON": the tool's URLs, its key and the services
        // (AGS scores, NRPS roster) it asks for; the page opens in a new window.
        const nlohmann::json key = {
            {"title", options.title},
            {"description",
             "Check a GPU exercise on the course's GPU; the score goes to the "
             "gradebook"},
            {"oidc_initiation_url", url + "/lti/login"},
            {"target_link_uri", url + "/lti/launch"},
            {"public_jwk_url", url + "/lti/jwks"},
            {"scopes",
             {"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
              "https://purl.imsglobal.org/spec/lti-ags/scope/score",
              "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"}},
            {"extensions",
             {{{"platform", "canvas.instructure.com"},
               {"privacy_level", "public"},
               {"settings",
                {{"placements",
                  {{{"placement", "link_selection"},
                    {"message_type", "LtiResourceLinkRequest"},
                    {"target_link_uri", url + "/lti/launch"},
                    {"windowTarget", "_blank"}}}}}}}}}};
        std::cout << text::json_text(key, 2) << "\n";
        return kExitPass;
    }
    if (options.format == "jwks") {
        std::cout << text::json_text(nlohmann::json{{"keys", nlohmann::json::array({jwk})}}, 2)
                  << "\n";
        return kExitPass;
    }
    std::cout << "Register this tool with the LMS (LTI 1.3):\n"
              << "  Tool URL / target link URI:  " << url << "/lti/launch?exercise=EXERCISE\n"
              << "  Login initiation URL:        " << url << "/lti/login\n"
              << "  Redirection URI:             " << url << "/lti/launch\n"
              << "  Public keyset (JWKS) URL:    " << url << "/lti/jwks\n"
              << "  Key id (kid):                " << jwk.value("kid", "") << "\n"
              << "  Services: AGS scores (and line items), NRPS roster; send the user's name "
                 "and username\n"
              << "Then: grader lti platform add --issuer ... --client-id ... --deployment ... "
                 "(what the LMS shows back)\n"
              << "Start the service with: grader serve --lti-url " << url << "\n";
    return kExitPass;
}

int run_add(LtiCommandOptions options) {
    serve::LtiPlatform& platform = options.platform;
    if (!options.moodle.empty()) {
        // Moodle's endpoints, as its "Tool configuration details" lists them.
        const std::string moodle = without_final_slash(options.moodle);
        platform.issuer = platform.issuer.empty() ? moodle : platform.issuer;
        platform.auth_url =
            platform.auth_url.empty() ? moodle + "/mod/lti/auth.php" : platform.auth_url;
        platform.token_url =
            platform.token_url.empty() ? moodle + "/mod/lti/token.php" : platform.token_url;
        platform.jwks_url =
            platform.jwks_url.empty() ? moodle + "/mod/lti/certs.php" : platform.jwks_url;
        platform.name = platform.name.empty() ? "Moodle" : platform.name;
    }
    for (const auto& [name, value] :
         {std::pair<const char*, const std::string*>{"--issuer", &platform.issuer},
          {"--auth-url", &platform.auth_url},
          {"--token-url", &platform.token_url},
          {"--jwks-url", &platform.jwks_url}}) {
        if (value->empty()) {
            spdlog::error("{} is needed (or --moodle URL, which gives Moodle's)", name);
            return kExitUsage;
        }
        if (name != std::string("--issuer") && value->rfind("https://", 0) != 0 &&
            value->rfind("http://", 0) != 0) {
            spdlog::error("{} {}: give an http:// or https:// address", name,
                          text::visible_line(*value));
            return kExitUsage;
        }
    }
    const auto store = open_lti_store(options.state);
    store->save_platform(platform);
    std::cerr << "grader lti: " << text::visible_line(platform.issuer) << " (client_id "
              << text::visible_line(platform.client_id) << ", " << platform.deployments.size()
              << " deployment(s)) is registered; grader serve takes its launches at once (no "
                 "restart)\n";
    return kExitPass;
}

int run_list(const LtiCommandOptions& options) {
    const auto store = open_lti_store(options.state);
    std::cout << "issuer,client_id,name,deployments,auth_url,token_url,jwks_url\n";
    for (const serve::LtiPlatform& platform : store->platforms()) {
        std::string deployments;
        for (const std::string& deployment : platform.deployments) {
            deployments += (deployments.empty() ? "" : " ") + deployment;
        }
        std::cout << text::csv_field(platform.issuer) << "," << text::csv_field(platform.client_id)
                  << "," << text::csv_field(platform.name) << "," << text::csv_field(deployments)
                  << "," << text::csv_field(platform.auth_url) << ","
                  << text::csv_field(platform.token_url) << ","
                  << text::csv_field(platform.jwks_url) << "\n";
    }
    return kExitPass;
}

int run_remove(const LtiCommandOptions& options) {
    const auto store = open_lti_store(options.state);
    if (!store->remove_platform(options.platform.issuer, options.platform.client_id)) {
        spdlog::error("no platform {} with client_id {} (grader lti platform list)",
                      text::visible_line(options.platform.issuer),
                      text::visible_line(options.platform.client_id));
        return kExitUsage;
    }
    return kExitPass;
}

// Runs a subcommand, saying the library's refusal in one line.
int guarded(const std::function<int()>& body) {
    try {
        return body();
    } catch (const serve::lti::JwtError& error) {
        spdlog::error("{}", error.what());
        return kExitUngradable;
    } catch (const serve::StoreError& error) {
        spdlog::error("{}", error.what());
        return kExitUngradable;
    }
}

}  // namespace

void add_lti_command(CLI::App& app, const GlobalOptions& global, Runner& run) {
    (void)global;
    auto options = std::make_shared<LtiCommandOptions>();
    CLI::App* command = app.add_subcommand(
        "lti", "Make `grader serve` an LTI 1.3 tool of a course's LMS (Moodle, Canvas, ...)");
    command->require_subcommand(1);
    const auto state_option = [&](CLI::App* sub) {
        sub->add_option("--state", options->state, "The service's state folder (grader serve's)")
            ->capture_default_str();
    };
    CLI::App* tool = command->add_subcommand(
        "tool", "What the LMS's administrator registers: the tool's URLs and public key");
    tool->add_option("--url", options->url,
                     "Where the LMS and browsers reach grader serve: https://HOST[/PATH]")
        ->required();
    tool->add_option("--format", options->format,
                     "text, canvas (a Canvas developer key's JSON) or jwks (the public key)")
        ->check(CLI::IsMember({"text", "canvas", "jwks"}))
        ->capture_default_str();
    tool->add_option("--title", options->title, "The tool's name in Canvas")->capture_default_str();
    state_option(tool);
    tool->callback([options, &run] {
        run = [options] { return guarded([&] { return run_tool(*options); }); };
    });

    CLI::App* platform = command->add_subcommand("platform", "The LMSs whose launches are taken");
    platform->require_subcommand(1);
    CLI::App* add = platform->add_subcommand(
        "add", "Register an LMS: what it shows once the tool is registered there");
    add->add_option("--issuer", options->platform.issuer, "Its issuer (iss), e.g. its address");
    add->add_option("--client-id", options->platform.client_id, "This tool's client ID there")
        ->required();
    add->add_option("--deployment", options->platform.deployments,
                    "A deployment ID of this tool there (repeat for several)")
        ->required();
    add->add_option("--auth-url", options->platform.auth_url, "Its OIDC authentication URL");
    add->add_option("--token-url", options->platform.token_url, "Its access token URL");
    add->add_option("--jwks-url", options->platform.jwks_url, "Its public keyset URL");
    add->add_option("--name", options->platform.name, "Its name, for people to read");
    add->add_option("--moodle", options->moodle,
                    "A Moodle's address (its wwwroot): its issuer and its three URLs from it");
    state_option(add);
    add->callback([options, &run] {
        run = [options] { return guarded([&] { return run_add(*options); }); };
    });

    CLI::App* list = platform->add_subcommand("list", "The LMSs registered here");
    state_option(list);
    list->callback([options, &run] {
        run = [options] { return guarded([&] { return run_list(*options); }); };
    });

    CLI::App* remove = platform->add_subcommand("remove", "Stop taking an LMS's launches");
    remove->add_option("--issuer", options->platform.issuer, "Its issuer")->required();
    remove->add_option("--client-id", options->platform.client_id, "This tool's client ID there")
        ->required();
    state_option(remove);
    remove->callback([options, &run] {
        run = [options] { return guarded([&] { return run_remove(*options); }); };
    });
    command->footer(
        "Examples:\n  grader lti tool --url https://gpu.course.edu\n"
        "  grader lti platform add --moodle https://moodle.course.edu --client-id AbC123 "
        "--deployment 1\n  grader serve --lti-url https://gpu.course.edu --lti-score best\n"
        "docs/lti.md has the steps for Moodle, Canvas and Blackboard.");
}

}  // namespace grader::cli
