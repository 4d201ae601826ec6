// Fuzzes what the agent does with bytes from a socket: the incremental frame decoder (fed in
// pieces whose sizes come from the input), request decoding and validation, and the end-of-stream
// check; and the same bytes as the target of a GET of the logs route, which must read back what it
// spells. None of it may crash, hang or allocate by a length it has not checked.
#include "executor/client/LogsHttp.h"
#include "executor/client/Protocol.h"

#include <cstdlib>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string why;
  if (auto logs = msc::exec::parseLogsTarget(llvm::StringRef(reinterpret_cast<const char *>(data), size), why)) {
    auto again = msc::exec::parseLogsTarget(msc::exec::logsTarget(*logs), why);
    if (!again || again->SerializeAsString() != logs->SerializeAsString())
      std::abort();
  }
  msc::exec::FrameDecoder decoder(4096);
  size_t step = 1 + data[0] % 17, off = 1;
  std::string payload;
  msc::exec::ProtocolError error;
  while (off < size) {
    size_t n = std::min(step, size - off);
    decoder.append(llvm::StringRef(reinterpret_cast<const char *>(data + off), n));
    off += n;
    for (;;) {
      auto r = decoder.next(payload, error);
      if (r == msc::exec::FrameDecoder::Result::NeedMore)
        break;
      if (r == msc::exec::FrameDecoder::Result::Error)
        return 0;
      if (auto req = msc::exec::decodeRequest(payload, error)) {
        msc::agent::Response resp;
        resp.set_id(req->id());
        (void)resp.SerializeAsString();
      }
    }
  }
  (void)decoder.finish();
  return 0;
}
