// hypercube_perf: nccl-tests' hypercube test, an all-gather built from grouped ncclSend/ncclRecv,
// one group per dimension; needs a power-of-two number of ranks.
#include "perf/common/driver.h"

int main(int argc, char** argv) { return atl::perf::toolMain(argc, argv, atl::perf::Coll::HyperCube); }
