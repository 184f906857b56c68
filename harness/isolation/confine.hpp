#pragma once

// Confinement of the process that compiles a student's source: the kernel itself, not the
// include vetting, then keeps the compiler from opening any file. Two mechanisms, used together
// where the kernel offers both:
// - Landlock (Linux 5.13+, unprivileged): a ruleset that handles every filesystem right of the
//   best ABI the kernel offers (and TCP and IPC scopes where the ABI has them) with no rule
//   granting any, so no path can be opened, executed, created or removed.
// - An empty mount namespace (a user namespace for the privilege, a read-only empty tmpfs as the
//   root): no host path exists at all, so even stat() cannot tell which files the host has, which
//   Landlock alone leaves open.
// What was already open (pipes, loaded libraries) keeps working: load what the compiler needs
// first, then confine.

#include <string>

namespace grader {

// What the kernel offers, probed without confining the caller.
struct ConfinementSupport {
    int landlock_abi = 0;          // 0: no Landlock
    bool user_namespaces = false;  // an unprivileged user and mount namespace can be made

    bool confines() const { return landlock_abi > 0 || user_namespaces; }
};

// Probed once per process (a short-lived forked child tries the namespace); thread-safe.
const ConfinementSupport& confinement_support();

// The sentence `grader batch` prints once where the student's compile cannot be confined, and
// empty where it can: "the student's compile is not confined: this kernel offers neither ...".
std::string confinement_warning(const ConfinementSupport& support);

struct ConfineOptions {
    bool landlock = true;
    bool empty_root = true;  // needs a single-threaded caller; skipped quietly where it fails
};

struct Confinement {
    int landlock_abi = 0;     // the ABI whose rights were all denied; 0 where Landlock was not used
    bool empty_root = false;  // the process now sees an empty, read-only root
    bool files_closed() const { return landlock_abi > 0 || empty_root; }
    // For the report's environment: "Landlock ABI 7 and an empty mount namespace: the student's
    // compile could open no file", or "no confinement: ..." with the reasons each step failed.
    std::string description;
};

// Sets PR_SET_NO_NEW_PRIVS, then confines the calling process for the rest of its life.
// The empty root needs the process to be single-threaded (unshare of a user namespace refuses a
// threaded caller), so call this before starting threads. Never throws: what could not be done
// is said in the description.
Confinement confine_to_no_files(const ConfineOptions& options = {});

}  // namespace grader
