#include "xtrain/logging.hpp"

#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "common/env_value.hpp"
#include "xtrain/error.hpp"

namespace xtrain::logging {

namespace {

constexpr std::size_t kNumModules = allModules.size();

// "2026-11-21T10:05:16.123Z session 4242.4243 I: message", timestamps in UTC.
constexpr const char* kPattern = "%Y-%m-%dT%H:%M:%S.%eZ %n %P.%t %L: %v";

constexpr const char* kEnvLevel = "XTRAIN_LOG_LEVEL";
constexpr const char* kEnvDest = "XTRAIN_LOG_DEST";
constexpr const char* kEnvConfig = "XTRAIN_LOG_CONFIG";

constexpr std::array<const char*, kNumModules> kModuleNames = {
    "xtrain", "session", "ir",  "devicex", "transform",   "pattern",  "builder",
    "op",     "opx",     "ces", "comm",    "replication", "launcher", "checkpoint"};

struct LevelName {
  const char* name;
  Level level;
};
// Canonical names first (they are the ones listed in error messages), then accepted aliases.
constexpr std::array<LevelName, 7> kLevelNames = {{{"trace", Level::Trace},
                                                   {"debug", Level::Debug},
                                                   {"info", Level::Info},
                                                   {"warn", Level::Warn},
                                                   {"err", Level::Err},
                                                   {"critical", Level::Critical},
                                                   {"off", Level::Off}}};
constexpr std::array<LevelName, 2> kLevelAliases = {
    {{"warning", Level::Warn}, {"error", Level::Err}}};

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string joinNames(const auto& names, auto nameOf) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += nameOf(n);
  }
  return out;
}

std::size_t indexOf(Module module) {
  auto i = static_cast<std::size_t>(module);
  if (i >= kNumModules) throw error("invalid logging::Module value {}", static_cast<int>(module));
  return i;
}

spdlog::level::level_enum toSpdlog(Level level) {
  switch (level) {
    case Level::Trace: return spdlog::level::trace;
    case Level::Debug: return spdlog::level::debug;
    case Level::Info: return spdlog::level::info;
    case Level::Warn: return spdlog::level::warn;
    case Level::Err: return spdlog::level::err;
    case Level::Critical: return spdlog::level::critical;
    case Level::Off: return spdlog::level::off;
  }
  return spdlog::level::off;
}

// One sink (the destination) shared by one logger per module. Replaced as a whole on
// reconfiguration; writers hold a shared_ptr to the one they started with.
struct Output {
  std::shared_ptr<spdlog::sinks::sink> sink;
  std::array<std::shared_ptr<spdlog::logger>, kNumModules> loggers;
};

std::shared_ptr<Output> makeOutput(const std::string& dest) {
  auto out = std::make_shared<Output>();
  if (dest.empty() || equalsIgnoreCase(dest, "stderr")) {
    out->sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else if (equalsIgnoreCase(dest, "stdout")) {
    out->sink = std::make_shared<spdlog::sinks::stdout_sink_mt>();
  } else {
    try {
      out->sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(dest, /*truncate=*/false);
    } catch (const std::exception& e) {
      throw error("{}: cannot open log file '{}' for appending: {}", kEnvDest, dest, e.what());
    }
  }
  out->sink->set_formatter(
      std::make_unique<spdlog::pattern_formatter>(kPattern, spdlog::pattern_time_type::utc));
  out->sink->set_level(spdlog::level::trace);
  for (std::size_t i = 0; i < kNumModules; ++i) {
    auto logger = std::make_shared<spdlog::logger>(kModuleNames[i], out->sink);
    logger->set_level(spdlog::level::trace);  // filtering is done by shouldLog()
    logger->flush_on(spdlog::level::warn);
    out->loggers[i] = std::move(logger);
  }
  return out;
}

// Per-module levels from XTRAIN_LOG_CONFIG (a JSON object {"session": "debug", ...}).
std::array<std::optional<Level>, kNumModules> readConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw error("{}: cannot open log config file '{}'", kEnvConfig, path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw error("{}: log config file '{}' is not valid JSON: {}", kEnvConfig, path, e.what());
  }
  if (!doc.is_object()) {
    throw error(
        "{}: log config file '{}' must hold a JSON object of module levels such as "
        "{\"session\": \"debug\"}, not {}",
        kEnvConfig, path, doc.type_name());
  }
  std::array<std::optional<Level>, kNumModules> levels;
  for (const auto& [key, value] : doc.items()) {
    Module module;
    try {
      module = moduleFromString(key);
    } catch (const error& e) {
      throw error("{}: log config file '{}', key '{}': {}", kEnvConfig, path, key, e.what());
    }
    if (!value.is_string()) {
      throw error(
          "{}: log config file '{}', key '{}': the level must be a string such as \"info\", "
          "not {}",
          kEnvConfig, path, key, value.dump());
    }
    try {
      levels[indexOf(module)] = levelFromString(value.get<std::string>());
    } catch (const error& e) {
      throw error("{}: log config file '{}', key '{}': {}", kEnvConfig, path, key, e.what());
    }
  }
  return levels;
}

std::string getEnv(const char* name) {
  return readEnvString(name).value_or(std::string());
}

// Process-wide state. Never destroyed, so that logging from other static destructors stays valid; C
// streams (including spdlog's file) are flushed by exit().
class State {
 public:
  bool shouldLog(Module module, Level level) {
    auto i = static_cast<std::size_t>(module);
    if (i >= kNumModules || level >= Level::Off || level < Level::Trace) return false;
    ensureConfigured();
    return static_cast<int>(level) >= levels_[i].load(std::memory_order_relaxed);
  }

  void log(Module module, Level level, const std::string& message) {
    if (!shouldLog(module, level)) return;
    currentOutput()->loggers[indexOf(module)]->log(
        toSpdlog(level), spdlog::string_view_t(message.data(), message.size()));
  }

  void setLevel(Module module, Level level) {
    auto i = indexOf(module);
    ensureConfigured();
    std::lock_guard lock(configMutex_);
    levels_[i].store(static_cast<int>(level), std::memory_order_relaxed);
  }

  Level getLevel(Module module) {
    auto i = indexOf(module);
    ensureConfigured();
    return static_cast<Level>(levels_[i].load(std::memory_order_relaxed));
  }

  void setDefaultLevel(Level level) {
    std::lock_guard lock(configMutex_);
    defaultLevel_ = level;
    if (configured_.load(std::memory_order_acquire)) applyLevelsLocked();
  }

  Level getDefaultLevel() {
    std::lock_guard lock(configMutex_);
    return defaultLevel_;
  }

  void configureFromEnvironment() {
    std::lock_guard lock(configMutex_);
    configureLocked();
  }

  void flush() {
    ensureConfigured();
    currentOutput()->sink->flush();
  }

 private:
  void ensureConfigured() {
    if (configured_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(configMutex_);
    if (!configured_.load(std::memory_order_relaxed)) configureLocked();
  }

  // Reads everything first and commits only if all of it is valid.
  void configureLocked() {
    std::array<std::optional<Level>, kNumModules> envLevels;
    if (std::string all = getEnv(kEnvLevel); !all.empty()) {
      Level level;
      try {
        level = levelFromString(all);
      } catch (const error&) {
        throwBadValue(kEnvLevel, all,
                      format("a log level: {} (any case)",
                             joinNames(kLevelNames, [](const LevelName& r) { return r.name; })));
      }
      envLevels.fill(level);
    }
    if (std::string path = getEnv(kEnvConfig); !path.empty()) {
      auto fromFile = readConfigFile(path);
      for (std::size_t i = 0; i < kNumModules; ++i) {
        if (fromFile[i]) envLevels[i] = fromFile[i];
      }
    }
    auto output = makeOutput(getEnv(kEnvDest));

    envLevels_ = envLevels;
    std::shared_ptr<Output> old;
    {
      std::lock_guard lock(outputMutex_);
      old = std::exchange(output_, std::move(output));
    }
    if (old) old->sink->flush();
    applyLevelsLocked();
    configured_.store(true, std::memory_order_release);
  }

  void applyLevelsLocked() {
    for (std::size_t i = 0; i < kNumModules; ++i) {
      levels_[i].store(static_cast<int>(envLevels_[i].value_or(defaultLevel_)),
                       std::memory_order_relaxed);
    }
  }

  std::shared_ptr<Output> currentOutput() {
    std::lock_guard lock(outputMutex_);
    return output_;
  }

  std::array<std::atomic<int>, kNumModules> levels_{};  // a Level per module, read without locking
  std::atomic<bool> configured_{false};
  std::mutex configMutex_;  // serializes configuration changes
  Level defaultLevel_ = Level::Off;
  std::array<std::optional<Level>, kNumModules> envLevels_;
  std::mutex outputMutex_;  // guards output_ only
  std::shared_ptr<Output> output_;
};

State& state() {
  static State* s = new State();
  return *s;
}

}  // namespace

const char* toString(Module module) {
  auto i = static_cast<std::size_t>(module);
  return i < kNumModules ? kModuleNames[i] : "unknown";
}

const char* toString(Level level) {
  switch (level) {
    case Level::Trace: return "TRACE";
    case Level::Debug: return "DEBUG";
    case Level::Info: return "INFO";
    case Level::Warn: return "WARN";
    case Level::Err: return "ERR";
    case Level::Critical: return "CRITICAL";
    case Level::Off: return "OFF";
  }
  return "UNKNOWN";
}

Level levelFromString(std::string_view text) {
  for (const auto& row : kLevelNames) {
    if (equalsIgnoreCase(text, row.name)) return row.level;
  }
  for (const auto& row : kLevelAliases) {
    if (equalsIgnoreCase(text, row.name)) return row.level;
  }
  throw error("unknown log level '{}' (valid levels: {})", text,
              joinNames(kLevelNames, [](const LevelName& r) { return r.name; }));
}

Module moduleFromString(std::string_view text) {
  for (std::size_t i = 0; i < kNumModules; ++i) {
    if (equalsIgnoreCase(text, kModuleNames[i])) return allModules[i];
  }
  throw error("unknown log module '{}' (valid modules: {})", text,
              joinNames(kModuleNames, [](const char* n) { return n; }));
}

void setLevel(Module module, Level level) {
  state().setLevel(module, level);
}

void setLevel(const std::string& module, const std::string& level) {
  // Both names are checked before anything changes.
  const Level l = levelFromString(level);
  // The documented `setLevel("popart", "DEBUG")` sets every module (executing-graphs.txt 5.7.1).
  if (equalsIgnoreCase(module, "all") || equalsIgnoreCase(module, "popart") ||
      equalsIgnoreCase(module, kModuleNames[0])) {
    setDefaultLevel(l);
    for (Module m : allModules) state().setLevel(m, l);
    return;
  }
  // PopART's "python" (its Python module) and "none" (unidentified) log as xtrain's default module.
  if (equalsIgnoreCase(module, "python") || equalsIgnoreCase(module, "none")) {
    state().setLevel(Module::xtrain, l);
    return;
  }
  Module m;
  try {
    m = moduleFromString(module);
  } catch (const error&) {
    throw error(
        "unknown log module '{}' (valid modules: all, popart, {}, python, none; all, popart and "
        "xtrain set every module)",
        module, joinNames(kModuleNames, [](const char* n) { return n; }));
  }
  state().setLevel(m, l);
}
Level getLevel(Module module) {
  return state().getLevel(module);
}
bool shouldLog(Module module, Level level) {
  return state().shouldLog(module, level);
}
void setDefaultLevel(Level level) {
  state().setDefaultLevel(level);
}
Level getDefaultLevel() {
  return state().getDefaultLevel();
}
void setDefaultLevelForTools() {
  setDefaultLevel(Level::Info);
}
void configureFromEnvironment() {
  state().configureFromEnvironment();
}
void log(Module module, Level level, const std::string& message) {
  state().log(module, level, message);
}
void flush() {
  state().flush();
}

}  // namespace xtrain::logging
