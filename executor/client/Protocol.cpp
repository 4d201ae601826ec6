#include "executor/client/Protocol.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

namespace msc::exec {

namespace {
ProtocolError make(DiagCode code, std::initializer_list<std::string> args) {
  return {code, formatDiag(diagInfo(code).format, std::vector<std::string>(args))};
}
} // namespace

std::string encodeFrame(const google::protobuf::MessageLite &message) {
  std::string payload = message.SerializeAsString();
  uint32_t n = static_cast<uint32_t>(payload.size());
  std::string out(kFrameHeaderBytes, '\0');
  for (size_t i = 0; i < 4; ++i)
    out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + payload;
}

FrameDecoder::Result FrameDecoder::next(std::string &payload, ProtocolError &error) {
  if (failed_)
    return Result::NeedMore;
  if (buffer_.size() < kFrameHeaderBytes)
    return Result::NeedMore;
  uint64_t n = 0;
  for (size_t i = 0; i < 4; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(buffer_[i])) << (8 * i);
  if (n > max_) {
    failed_ = true;
    error = make(DiagCode::ERR_EXEC_010, {std::to_string(n), std::to_string(max_)});
    return Result::Error;
  }
  if (buffer_.size() < kFrameHeaderBytes + n)
    return Result::NeedMore;
  payload.assign(buffer_, kFrameHeaderBytes, n);
  buffer_.erase(0, kFrameHeaderBytes + n);
  return Result::Frame;
}

std::optional<ProtocolError> FrameDecoder::finish() const {
  if (failed_ || buffer_.empty())
    return std::nullopt;
  if (buffer_.size() < kFrameHeaderBytes)
    return make(DiagCode::ERR_EXEC_011, {std::to_string(buffer_.size()) + " byte(s) of a 4-byte length prefix"});
  uint64_t n = 0;
  for (size_t i = 0; i < 4; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(buffer_[i])) << (8 * i);
  return make(DiagCode::ERR_EXEC_011, {std::to_string(buffer_.size() - kFrameHeaderBytes) + " of " +
                                       std::to_string(n) + " payload bytes arrived"});
}

std::optional<agent::Request> decodeRequest(llvm::StringRef payload, ProtocolError &error) {
  agent::Request r;
  if (!r.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    error = make(DiagCode::ERR_EXEC_012, {"not an msc.agent.Request (" + std::to_string(payload.size()) + " bytes)"});
    return std::nullopt;
  }
  auto needContract = [&](const std::string &c, const char *what) {
    if (!c.empty())
      return true;
    error = make(DiagCode::ERR_EXEC_012, {std::string(what) + " request without a contract"});
    return false;
  };
  switch (r.body_case()) {
  case agent::Request::BODY_NOT_SET:
    error = make(DiagCode::ERR_EXEC_012, {"the request carries no command"});
    return std::nullopt;
  case agent::Request::kSubmit:
    if (r.submit().plan().empty()) {
      error = make(DiagCode::ERR_EXEC_012, {"submit request without a plan"});
      return std::nullopt;
    }
    break;
  case agent::Request::kStatus:
    if (!needContract(r.status().contract(), "status"))
      return std::nullopt;
    break;
  case agent::Request::kRelease:
    if (!needContract(r.release().contract(), "release"))
      return std::nullopt;
    break;
  case agent::Request::kResize:
    if (!needContract(r.resize().contract(), "resize"))
      return std::nullopt;
    break;
  case agent::Request::kLookup:
    if (!needContract(r.lookup().contract(), "lookup"))
      return std::nullopt;
    break;
  case agent::Request::kAttach:
    if (!needContract(r.attach().contract(), "attach"))
      return std::nullopt;
    if (r.attach().pid() <= 0) {
      error = make(DiagCode::ERR_EXEC_012, {"attach request with pid " + std::to_string(r.attach().pid()) +
                                            " (expected a process id > 0)"});
      return std::nullopt;
    }
    break;
  case agent::Request::kLogs:
    if (!needContract(r.logs().contract(), "logs"))
      return std::nullopt;
    if (r.logs().attempt() < -1) {
      error = make(DiagCode::ERR_EXEC_012, {"logs request for attempt " + std::to_string(r.logs().attempt()) +
                                            " (expected -1, the newest, or an attempt >= 0)"});
      return std::nullopt;
    }
    break;
  case agent::Request::kList:
  case agent::Request::kLoans:
    break;
  }
  return r;
}

void addDiagnostic(agent::Response &response, const Diagnostic &diag) {
  agent::Diagnostic *d = response.add_diagnostics();
  d->set_code(diagInfo(diag.code).name.str());
  d->set_severity(severityName(diag.severity).str());
  d->set_message(diag.message);
  d->set_file(diag.loc.file);
  for (const DiagNote &n : diag.notes)
    d->add_notes(n.message);
}

void addError(agent::Response &response, const ProtocolError &error) {
  agent::Diagnostic *d = response.add_diagnostics();
  d->set_code(diagInfo(error.code).name.str());
  d->set_severity("error");
  d->set_message(error.message);
  response.set_ok(false);
}

void emitDiagnostics(const agent::Response &response, DiagnosticEngine &diags) {
  for (const agent::Diagnostic &d : response.diagnostics()) {
    std::optional<DiagCode> code = lookupDiagCode(d.code());
    if (!code)
      continue;
    Diagnostic out;
    out.code = *code;
    out.severity = diagInfo(*code).severity;
    out.message = d.message();
    out.loc.file = d.file();
    for (const std::string &n : d.notes())
      out.notes.push_back(DiagNote{Location::none(), n, {}});
    diags.emit(std::move(out));
  }
}

bool writeFrame(int fd, const google::protobuf::MessageLite &message, std::string &error) {
  std::string frame = encodeFrame(message);
  size_t off = 0;
  while (off < frame.size()) {
    ssize_t n = ::send(fd, frame.data() + off, frame.size() - off, MSG_NOSIGNAL); // a refusing agent may have closed
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = std::strerror(errno);
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

bool readFrame(int fd, uint64_t maxFrameBytes, std::string &payload, ProtocolError &error, std::string &ioError) {
  FrameDecoder dec(maxFrameBytes);
  char buf[65536];
  for (;;) {
    switch (dec.next(payload, error)) {
    case FrameDecoder::Result::Frame:
      return true;
    case FrameDecoder::Result::Error:
      return false;
    case FrameDecoder::Result::NeedMore:
      break;
    }
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      ioError = std::strerror(errno);
      return false;
    }
    if (n == 0) {
      if (std::optional<ProtocolError> e = dec.finish())
        error = *e;
      else
        ioError = "the connection was closed before a response arrived";
      return false;
    }
    dec.append(llvm::StringRef(buf, static_cast<size_t>(n)));
  }
}

} // namespace msc::exec
