// The output router: every byte the job's processes write on stdout and stderr goes through it, to
// xrun's own stdout and stderr (tagged and filtered), to the per-instance files of --output-dir,
// and, for stderr, to the failure witness. xrun's own messages ("xrun: ...") go out through it too.
//
// Contract:
//  - Bytes are split into lines per process and stream (launcher/output.hpp: LineSplitter); each
//    line is written with one write(), so lines never mix within a line; lines keep their order
//    per process and stream.
//  - Local engine: a line of instance i goes to DIR/instance-<i>.out or .err untagged, and, if the
//    OutputPolicy lets it through (shouldPrint), tagged to xrun's stdout or stderr (renderLine).
//  - Engine mode (spec.engine): the engine is the only process (source 0). A line the engine tagged
//    with one of the job's instances is printed as it is (without the tag when the policy does not
//    tag), filtered by the policy on that instance, and written untagged to that instance's file;
//    mpirun's tagged pieces are first joined into whole lines (MpirunLineJoiner). The engine's own
//    lines, and those tagged with an instance out of range, are always printed as they are.
//  - Every stderr line of an instance goes to the witness's instanceStderr, the engine's own stderr
//    lines to its engineStderr.
//  - A write error on xrun's stdout or stderr (a closed pipe) stops the printing on that stream and
//    never ends the job; a write error on a file closes that file.
// Single-threaded; it holds no processes, only the file descriptors it writes to.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/failure_witness.hpp"
#include "launcher/local_engine.hpp"
#include "launcher/output.hpp"

namespace xtrain::launcher {

class OutputRouter {
 public:
  // Prints on spec.stdoutFd and spec.stderrFd; reads spec.output, spec.engine, spec.outputDir and
  // spec.appendOutput. `spec` and `witness` must outlive the router.
  OutputRouter(const LocalJobSpec& spec, FailureWitness& witness);
  ~OutputRouter();  // closes the files
  OutputRouter(const OutputRouter&) = delete;
  OutputRouter& operator=(const OutputRouter&) = delete;

  // --output-dir: creates the directory and opens DIR/instance-<i>.out and .err for every
  // instance, truncated unless spec.appendOutput; never through a symbolic link, never a file
  // another user owns. Throws xtrain::runtime_error naming the file. Nothing without outputDir.
  void openFiles();

  // Bytes read from process `source`'s stream (the instance's index; engine mode: 0).
  void feed(int source, Stream stream, std::string_view bytes);
  // The stream reached its end: its unterminated last line (and mpirun's pieces still waiting for
  // their newline) are routed as lines.
  void endOfStream(int source, Stream stream);

  // "xrun: <text>" on xrun's stderr.
  void message(const std::string& text);

  void closeFiles();

 private:
  void routeLine(int source, int stream, const std::string& line);
  void routeEngineLine(int stream, const std::string& line);
  void routeJoined(int stream, const std::vector<MpirunLineJoiner::Line>& lines);
  void routeOwnLine(int stream, const std::string& line);
  void routeInstanceLine(int stream, int instance, std::string_view tag, std::string_view text);
  void writeFile(int instance, int stream, std::string_view text);
  void print(Stream s, const std::string& text);

  const LocalJobSpec& spec_;
  FailureWitness& witness_;
  const bool engineMode_;
  const int numInstances_;
  std::vector<std::array<LineSplitter, 2>> splitters_;  // per process: stdout, stderr
  std::vector<std::array<int, 2>> files_;  // --output-dir: per instance, stdout and stderr
  MpirunLineJoiner joiners_[2];            // engine mpirun: stdout, stderr
  bool stdoutBroken_ = false;
  bool stderrBroken_ = false;
};

}  // namespace xtrain::launcher
