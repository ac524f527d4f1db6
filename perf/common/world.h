// Where this process sits in the job: which launcher started it, its process rank, and the unique
// id every rank joins.
#pragma once

#include <string>

#include "nccl.h"

namespace atl::perf {

struct World {
  int nprocs = 1;
  int proc = 0;
  int localProc = 0;
  ncclUniqueId id{};
  std::string launcher;  // "atollrun", "env", "mpi", "single"
  std::string idFile;    // unique-id file this process published (removed at exit)
};

/// Reads the launcher environment and obtains the unique id (may call ncclGetUniqueId). Must run
/// before any other library call, since it may set NCCL_COMM_ID. False with *error on bad setup.
bool discoverWorld(World* world, std::string* error);

/// Removes a published unique-id file once every rank has joined.
void retireIdFile(const World& world);

std::string hexEncode(const ncclUniqueId& id);
bool hexDecode(const std::string& hex, ncclUniqueId* id);

}  // namespace atl::perf
