// Entry point shared by the nccl-tests-compatible *_perf tools. Uses only the public nccl.h API so
// the tools also build and run against any NCCL-compatible library.
#pragma once

#include "perf/common/collectives.h"

namespace atl::perf {

/// Parses the command line, joins the job, sweeps the message sizes and prints the table.
/// Exit status: 0 ok, 1 wrong results, 2 usage or environment error, 3 library error.
int toolMain(int argc, char** argv, Coll coll);

}  // namespace atl::perf
