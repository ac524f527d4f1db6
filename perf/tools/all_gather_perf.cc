// all_gather_perf: nccl-tests-compatible benchmark and checker of ncclAllGather.
#include "perf/common/driver.h"

int main(int argc, char** argv) { return atl::perf::toolMain(argc, argv, atl::perf::Coll::AllGather); }
