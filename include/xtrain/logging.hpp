// xtrain::logging: per-module leveled logging with PopART's API and names (docs/logging.md).
//
//   logging::info("loaded {} tensors", n);            // default module `xtrain`
//   logging::session::debug("step {} took {} ms", step, ms);
//   logging::comm::warn("rank {} is slow", rank);
//
// Every module starts at Level::Off (tools call setDefaultLevelForTools() to get Info). The
// environment (XTRAIN_LOG_LEVEL, XTRAIN_LOG_DEST, XTRAIN_LOG_CONFIG) is read once, at the first
// logging call, and again on each configureFromEnvironment(). The helpers check shouldLog() before
// formatting anything, so a message whose level is off costs one relaxed atomic load.
//
// The implementation is spdlog; this header depends on neither spdlog nor fmt. Messages use
// xtrain::format (fmt's syntax: "{}" placeholders, specifiers such as "{:.3f}").
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "xtrain/api.hpp"
#include "xtrain/format.hpp"

namespace xtrain::logging {

// Where a message comes from; printed as the line's namespace. PopART's modules plus xtrain's own.
enum class Module {
  xtrain = 0,  // the default module (PopART's `popart`)
  session,
  ir,
  devicex,
  transform,
  pattern,
  builder,
  op,
  opx,
  ces,
  comm,
  replication,
  launcher,
  checkpoint,
};

inline constexpr std::array<Module, 14> allModules = {
    Module::xtrain,  Module::session,     Module::ir,       Module::devicex,   Module::transform,
    Module::pattern, Module::builder,     Module::op,       Module::opx,       Module::ces,
    Module::comm,    Module::replication, Module::launcher, Module::checkpoint};

// Severity, lowest first. A module at level L prints messages of level L and above; Off prints
// nothing.
enum class Level { Trace = 0, Debug, Info, Warn, Err, Critical, Off };

// "session", "ir", ... as used in XTRAIN_LOG_CONFIG and printed in each line.
XTRAIN_API const char* toString(Module module);
// "TRACE", "DEBUG", "INFO", "WARN", "ERR", "CRITICAL", "OFF".
XTRAIN_API const char* toString(Level level);

// Case-insensitive: "trace", "debug", "info", "warn" (or "warning"), "err" (or "error"),
// "critical", "off". Throws xtrain::error naming the text and listing the valid names.
XTRAIN_API Level levelFromString(std::string_view text);
// Case-insensitive module name ("xtrain", "session", ...). Throws xtrain::error naming the text and
// listing the valid names.
XTRAIN_API Module moduleFromString(std::string_view text);

XTRAIN_API void setLevel(Module module, Level level);
// PopART's string form (`popart::logger::setLevel("popart", "DEBUG")`): `module` is a module name,
// or "popart", "xtrain" or "all", which set every module (and the default level, as
// setDefaultLevel); PopART's "python" and "none" are the default module alone. `level` is a name
// levelFromString() takes ("TRACE", "DEBUG", ..., "OFF"). Throws xtrain::error naming a bad module
// or level and listing the valid ones; nothing changes then.
XTRAIN_API void setLevel(const std::string& module, const std::string& level);
XTRAIN_API Level getLevel(Module module);
// Whether a message of `level` from `module` would be printed.
XTRAIN_API bool shouldLog(Module module, Level level);

// Level of every module the environment does not configure; Off unless changed. Applies at once
// (replacing earlier setLevel() calls for those modules) and survives configureFromEnvironment().
XTRAIN_API void setDefaultLevel(Level level);
XTRAIN_API Level getDefaultLevel();
// For command-line tools: setDefaultLevel(Level::Info).
XTRAIN_API void setDefaultLevelForTools();

// (Re)reads XTRAIN_LOG_LEVEL, XTRAIN_LOG_DEST and XTRAIN_LOG_CONFIG: reopens the destination and
// resets every module's level (env config file, else XTRAIN_LOG_LEVEL, else the default level).
// Throws xtrain::error on a bad level or module name, an unreadable or malformed config file, or a
// log file that cannot be opened; nothing changes then. The first logging call does this implicitly
// (and throws the same errors), so tools may call it at startup to report a bad configuration up
// front.
XTRAIN_API void configureFromEnvironment();

// Prints `message` if shouldLog(module, level).
XTRAIN_API void log(Module module, Level level, const std::string& message);

// Writes buffered lines to the destination.
XTRAIN_API void flush();

namespace detail {
template <typename... Args>
void logf(Module module, Level level, std::string_view f, const Args&... args) {
  if (shouldLog(module, level)) log(module, level, ::xtrain::format(f, args...));
}
}  // namespace detail

// Helpers for the default module, then the same six for each other module in its own namespace.
template <typename... Args>
void trace(std::string_view f, const Args&... args) {
  detail::logf(Module::xtrain, Level::Trace, f, args...);
}
template <typename... Args>
void debug(std::string_view f, const Args&... args) {
  detail::logf(Module::xtrain, Level::Debug, f, args...);
}
template <typename... Args>
void info(std::string_view f, const Args&... args) {
  detail::logf(Module::xtrain, Level::Info, f, args...);
}
template <typename... Args>
void warn(std::string_view f, const Args&... args) {
  detail::logf(Module::xtrain, Level::Warn, f, args...);
}
template <typename... Args>
void err(std::string_view f, const Args&... args) {
  detail::logf(Module::xtrain, Level::Err, f, args...);
}
template <typename... Args>
void critical(std::string_view f, const Args&... args) {
  detail::logf(Module::xtrain, Level::Critical, f, args...);
}

// Defines logging::<module>::{trace,debug,info,warn,err,critical}. Undefined at the end of this
// header.
#define XTRAIN_LOGGING_MODULE_HELPERS_(mod)                                    \
  namespace mod {                                                              \
  template <typename... Args>                                                  \
  void trace(std::string_view f, const Args&... args) {                        \
    ::xtrain::logging::detail::logf(Module::mod, Level::Trace, f, args...);    \
  }                                                                            \
  template <typename... Args>                                                  \
  void debug(std::string_view f, const Args&... args) {                        \
    ::xtrain::logging::detail::logf(Module::mod, Level::Debug, f, args...);    \
  }                                                                            \
  template <typename... Args>                                                  \
  void info(std::string_view f, const Args&... args) {                         \
    ::xtrain::logging::detail::logf(Module::mod, Level::Info, f, args...);     \
  }                                                                            \
  template <typename... Args>                                                  \
  void warn(std::string_view f, const Args&... args) {                         \
    ::xtrain::logging::detail::logf(Module::mod, Level::Warn, f, args...);     \
  }                                                                            \
  template <typename... Args>                                                  \
  void err(std::string_view f, const Args&... args) {                          \
    ::xtrain::logging::detail::logf(Module::mod, Level::Err, f, args...);      \
  }                                                                            \
  template <typename... Args>                                                  \
  void critical(std::string_view f, const Args&... args) {                     \
    ::xtrain::logging::detail::logf(Module::mod, Level::Critical, f, args...); \
  }                                                                            \
  }

XTRAIN_LOGGING_MODULE_HELPERS_(session)
XTRAIN_LOGGING_MODULE_HELPERS_(ir)
XTRAIN_LOGGING_MODULE_HELPERS_(devicex)
XTRAIN_LOGGING_MODULE_HELPERS_(transform)
XTRAIN_LOGGING_MODULE_HELPERS_(pattern)
XTRAIN_LOGGING_MODULE_HELPERS_(builder)
XTRAIN_LOGGING_MODULE_HELPERS_(op)
XTRAIN_LOGGING_MODULE_HELPERS_(opx)
XTRAIN_LOGGING_MODULE_HELPERS_(ces)
XTRAIN_LOGGING_MODULE_HELPERS_(comm)
XTRAIN_LOGGING_MODULE_HELPERS_(replication)
XTRAIN_LOGGING_MODULE_HELPERS_(launcher)
XTRAIN_LOGGING_MODULE_HELPERS_(checkpoint)

#undef XTRAIN_LOGGING_MODULE_HELPERS_

}  // namespace xtrain::logging
