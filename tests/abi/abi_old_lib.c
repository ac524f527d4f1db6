/* A stand-in for a 2.28-era library: exports a few of NCCL's symbols and none of 2.30's, so the
 * symbol-set check has something to catch (abi.cmake). */
int ncclGetVersion(int* version) {
  *version = 22809;
  return 0;
}
int pncclGetVersion(int* version) { return ncclGetVersion(version); }
