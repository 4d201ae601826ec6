// Framing of the agent protocol (agent.proto): a 4-byte little-endian payload length, then
// the payload. The decoder is incremental (bytes arrive in pieces on a non-blocking socket) and
// turns every problem into a coded error: oversized (ERR_EXEC_010), truncated at EOF (ERR_EXEC_011),
// undecodable (ERR_EXEC_012). It never trusts the length before checking it against the limit.
#pragma once

#include "executor/client/agent.pb.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>

namespace msc::exec {

inline constexpr size_t kFrameHeaderBytes = 4;
inline constexpr uint64_t kDefaultMaxFrameBytes = 16ull << 20;

struct ProtocolError {
  DiagCode code;
  std::string message; // the formatted diagnostic message
};

std::string encodeFrame(const google::protobuf::MessageLite &message);

class FrameDecoder {
public:
  explicit FrameDecoder(uint64_t maxFrameBytes = kDefaultMaxFrameBytes) : max_(maxFrameBytes) {}
  void append(llvm::StringRef bytes) { buffer_.append(bytes.data(), bytes.size()); }
  enum class Result { NeedMore, Frame, Error };
  // Takes the next whole frame's payload out of the buffer. After an Error the stream cannot be
  // resynchronised (the length is not trusted); the caller answers and closes.
  Result next(std::string &payload, ProtocolError &error);
  // At end of stream: an error when a partial frame is left.
  std::optional<ProtocolError> finish() const;
  size_t buffered() const { return buffer_.size(); }

private:
  uint64_t max_;
  std::string buffer_;
  bool failed_ = false;
};

// Decodes and validates a request payload (a body must be set; contract names must be non-empty
// where a request needs one). ERR_EXEC_012 on any problem.
std::optional<agent::Request> decodeRequest(llvm::StringRef payload, ProtocolError &error);

// Diagnostics <-> protocol.
void addDiagnostic(agent::Response &response, const Diagnostic &diag);
void addError(agent::Response &response, const ProtocolError &error);
// Re-emits a response's diagnostics into `diags` (client side), codes preserved.
void emitDiagnostics(const agent::Response &response, DiagnosticEngine &diags);

// A consumer that copies diagnostics into a response.
class ResponseDiagnostics : public DiagnosticConsumer {
public:
  explicit ResponseDiagnostics(agent::Response &r) : r_(r) {}
  void handle(const Diagnostic &diag, const llvm::SourceMgr *) override { addDiagnostic(r_, diag); }

private:
  agent::Response &r_;
};

// Blocking helpers for clients and tests (sockets only): write a whole frame; read one whole frame.
bool writeFrame(int fd, const google::protobuf::MessageLite &message, std::string &error);
bool readFrame(int fd, uint64_t maxFrameBytes, std::string &payload, ProtocolError &error, std::string &ioError);

} // namespace msc::exec
