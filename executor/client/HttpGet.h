// One blocking HTTP/1.1 GET to a node agent's HTTP endpoint (HttpEndpoint on the agent's side),
// for clients on other machines: connect, send, read to the end (the agent closes after each
// answer), parse with Boost.Beast. No Asio I/O objects: a socket and poll, like the agent.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace msc::exec {

struct HttpResponse {
  unsigned status = 0;
  std::string contentType;
  std::string body;
};

// `address`: "HOST:PORT" or "[V6]:PORT". nullopt with `error` when no connection is made, the
// whole exchange takes longer than `timeout`, or the answer is not HTTP.
std::optional<HttpResponse> httpGet(const std::string &address, const std::string &target, const std::string &accept,
                                    std::chrono::milliseconds timeout, std::string &error);

} // namespace msc::exec
