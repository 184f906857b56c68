#pragma once

// SQLite for the service's state file (store.cpp's tables, and lti_store.cpp's beside them): a
// prepared statement that is finalized when it goes, a statement run whole, and a transaction
// rolled back where its scope is left by an exception. Every failure is a StoreError saying what.

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "serve/store.hpp"

namespace grader::serve::sqlite {

// One prepared statement, finalized when it goes.
class Statement {
public:
    Statement(sqlite3* db, const char* sql) : db_(db) {
        if (sqlite3_prepare_v2(db, sql, -1, &statement_, nullptr) != SQLITE_OK) {
            throw StoreError(std::string("the state file's query could not be prepared: ") +
                             sqlite3_errmsg(db));
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
        throw StoreError(std::string("the state file could not be read or written: ") +
                         sqlite3_errmsg(db_));
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

private:
    void check(int status) {
        if (status != SQLITE_OK) {
            throw StoreError(std::string("the state file's query could not be bound: ") +
                             sqlite3_errmsg(db_));
        }
    }
    sqlite3* db_;
    sqlite3_stmt* statement_ = nullptr;
};

inline void execute(sqlite3* db, const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
        std::string message = error != nullptr ? error : sqlite3_errmsg(db);
        sqlite3_free(error);
        throw StoreError("the state file could not be read or written: " + message);
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
