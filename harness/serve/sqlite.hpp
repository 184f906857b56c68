#pragma once

// SQLite for the service's state file (store.cpp's tables, and lti_store.cpp's beside them): a
// prepared statement that is finalized when it goes, a statement run whole, and a transaction
// rolled back where its scope is left by an exception. Every failure is a StoreError saying what,
// of the kind its cause is (another process's lock, a full disk, anything else).

#include <sqlite3.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/store.hpp"

namespace grader::serve::sqlite {

// What kind of trouble the connection's last error was: another process's lock, or no room
// (a full disk, a quota, RLIMIT_FSIZE), or anything else.
inline StoreError::Kind kind_of_error(sqlite3* db) {
    const int code = sqlite3_extended_errcode(db) & 0xff;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
        return StoreError::Kind::busy;
    }
    const int system = sqlite3_system_errno(db);
    if (code == SQLITE_FULL ||
        (code == SQLITE_IOERR && (system == ENOSPC || system == EDQUOT || system == EFBIG))) {
        return StoreError::Kind::full;
    }
    return StoreError::Kind::other;
}

inline std::string why_of_error(sqlite3* db) {
    switch (kind_of_error(db)) {
        case StoreError::Kind::busy:
            return "another process holds its lock (" + std::string(sqlite3_errmsg(db)) + ")";
        case StoreError::Kind::full:
            return "there is no room on its disk (" + std::string(sqlite3_errmsg(db)) + ")";
        case StoreError::Kind::other:
            break;
    }
    return sqlite3_errmsg(db);
}

inline StoreError error_of(sqlite3* db, const std::string& what) {
    return StoreError(what + why_of_error(db), kind_of_error(db));
}

// One prepared statement, finalized when it goes.
class Statement {
public:
    Statement(sqlite3* db, const char* sql) : db_(db) {
        if (sqlite3_prepare_v2(db, sql, -1, &statement_, nullptr) != SQLITE_OK) {
            throw error_of(db, "the state file's query could not be prepared: ");
        }
    }
    ~Statement() { sqlite3_finalize(statement_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, std::int64_t value) {
        check(sqlite3_bind_int64(statement_, index, value));
        return *this;
    }
    Statement& bind(int index, double value) {
        check(sqlite3_bind_double(statement_, index, value));
        return *this;
    }
    Statement& bind(int index, const std::string& value) {
        check(sqlite3_bind_text(statement_, index, value.data(), static_cast<int>(value.size()),
                                SQLITE_TRANSIENT));
        return *this;
    }
    // A list of strings is kept as a column of JSON text, read back by strings().
    Statement& bind(int index, const std::vector<std::string>& values) {
        return bind(index, nlohmann::json(values).dump());
    }
    Statement& bind_blob(int index, const void* data, std::size_t size) {
        check(sqlite3_bind_blob(statement_, index, data, static_cast<int>(size), SQLITE_TRANSIENT));
        return *this;
    }
    Statement& bind_null(int index) {
        check(sqlite3_bind_null(statement_, index));
        return *this;
    }
    // True while there is a row.
    bool step() {
        const int status = sqlite3_step(statement_);
        if (status == SQLITE_ROW) {
            return true;
        }
        if (status == SQLITE_DONE) {
            return false;
        }
        throw error_of(db_, "the state file could not be read or written: ");
    }
    std::int64_t integer(int column) const { return sqlite3_column_int64(statement_, column); }
    double real(int column) const { return sqlite3_column_double(statement_, column); }
    bool is_null(int column) const {
        return sqlite3_column_type(statement_, column) == SQLITE_NULL;
    }
    std::string text(int column) const {
        const auto* bytes = sqlite3_column_text(statement_, column);
        return bytes == nullptr
                   ? std::string()
                   : std::string(
                         reinterpret_cast<const char*>(bytes),
                         static_cast<std::size_t>(sqlite3_column_bytes(statement_, column)));
    }

    // A column bind() wrote from a list of strings; what is not a JSON array of strings is read
    // as an empty list, an element that is not a string is left out.
    std::vector<std::string> strings(int column) const {
        std::vector<std::string> values;
        const auto json = nlohmann::json::parse(text(column), nullptr, false);
        if (json.is_array()) {
            for (const auto& value : json) {
                if (value.is_string()) {
                    values.push_back(value.get<std::string>());
                }
            }
        }
        return values;
    }

private:
    void check(int status) {
        if (status != SQLITE_OK) {
            throw error_of(db_, "the state file's query could not be bound: ");
        }
    }
    sqlite3* db_;
    sqlite3_stmt* statement_ = nullptr;
};

inline void execute(sqlite3* db, const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
        sqlite3_free(error);
        throw error_of(db, "the state file could not be read or written: ");
    }
}

// BEGIN IMMEDIATE ... COMMIT, rolled back where the scope is left by an exception.
class Transaction {
public:
    explicit Transaction(sqlite3* db) : db_(db) { execute(db_, "BEGIN IMMEDIATE"); }
    ~Transaction() {
        if (!committed_) {
            sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        }
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit() {
        execute(db_, "COMMIT");
        committed_ = true;
    }

private:
    sqlite3* db_;
    bool committed_ = false;
};

}  // namespace grader::serve::sqlite
