// The parameter registry's sources: defaults, NCCL's configuration files (NCCL_CONF_FILE, else
// ~/.nccl.conf; then /etc/nccl.conf) and the environment, which wins; bad lines warn and change nothing.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/params.h"
#include "tests/common/saved_env.h"

namespace atl::params {
namespace {

class ConfFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/atoll-params-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    saved_.save({"NCCL_CONF_FILE", "HOME", "NCCL_BUFFSIZE", "NCCL_SHM_DISABLE", "NCCL_ALGO"}, /*unset=*/true);
    setenv("HOME", dir_.c_str(), 1);
  }
  void TearDown() override {
    saved_.restore();
    reloadForTesting();
    (void)!system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  /// Reloads and returns what the load printed to stderr.
  std::string reload() {
    ::testing::internal::CaptureStderr();
    reloadForTesting();
    (void)getInt(Id::BuffSize);
    return ::testing::internal::GetCapturedStderr();
  }

  std::string dir_;
  test::SavedEnv saved_;
};

TEST_F(ConfFile, FileValuesHaveSourceConfig) {
  setenv("NCCL_CONF_FILE",
         write("site.conf",
               "# comment\n\n  NCCL_BUFFSIZE = 2M  # trailing comment\nNCCL_ALGO=allreduce:ring;broadcast:ring\n")
             .c_str(),
         1);
  EXPECT_EQ(reload(), "");
  EXPECT_EQ(getInt(Id::BuffSize), 2 << 20);
  EXPECT_EQ(source(Id::BuffSize), Source::Config);
  EXPECT_EQ(getString(Id::Algo), "allreduce:ring;broadcast:ring");
  EXPECT_EQ(source(Id::Algo), Source::Config);
  EXPECT_EQ(source(Id::ShmDisable), Source::Default);
}

TEST_F(ConfFile, EnvironmentWinsOverTheFile) {
  setenv("NCCL_CONF_FILE", write("site.conf", "NCCL_BUFFSIZE=2M\n").c_str(), 1);
  setenv("NCCL_BUFFSIZE", "3M", 1);
  reload();
  EXPECT_EQ(getInt(Id::BuffSize), 3 << 20);
  EXPECT_EQ(source(Id::BuffSize), Source::Env);
  // An invalid environment value keeps the file's.
  setenv("NCCL_BUFFSIZE", "lots", 1);
  const std::string err = reload();
  EXPECT_NE(err.find("Ignoring invalid value 'lots' for NCCL_BUFFSIZE; using the configured '2M'"), std::string::npos)
      << err;
  EXPECT_EQ(getInt(Id::BuffSize), 2 << 20);
  EXPECT_EQ(source(Id::BuffSize), Source::Config);
}

TEST_F(ConfFile, HomeFileUnlessNcclConfFileIsSet) {
  write(".nccl.conf", "NCCL_BUFFSIZE=64K\n");
  reload();
  EXPECT_EQ(getInt(Id::BuffSize), 64 << 10);
  EXPECT_EQ(source(Id::BuffSize), Source::Config);
  setenv("NCCL_CONF_FILE", write("other.conf", "NCCL_SHM_DISABLE=1\n").c_str(), 1);
  reload();
  EXPECT_EQ(source(Id::BuffSize), Source::Default);  // the home file is replaced, not merged
  EXPECT_TRUE(getBool(Id::ShmDisable));
}

TEST_F(ConfFile, FirstSettingInAFileWins) {
  setenv("NCCL_CONF_FILE", write("twice.conf", "NCCL_BUFFSIZE=64K\nNCCL_BUFFSIZE=128K\n").c_str(), 1);
  reload();
  EXPECT_EQ(getInt(Id::BuffSize), 64 << 10);
}

TEST_F(ConfFile, BadLinesWarnWithFileAndLineAndChangeNothing) {
  const std::string path =
      write("bad.conf", "NCCL_BUFFSIZE\nNCCL_SHM_DISABLE=maybe\nNCCL_CONF_FILE=/elsewhere\nNCCL_IB_HCA=mlx5\n");
  setenv("NCCL_CONF_FILE", path.c_str(), 1);
  const std::string err = reload();
  EXPECT_NE(err.find("Ignoring line 1 of " + path + ": expected NAME=VALUE"), std::string::npos) << err;
  EXPECT_NE(err.find("Ignoring invalid value 'maybe' for NCCL_SHM_DISABLE at " + path + ":2"), std::string::npos)
      << err;
  EXPECT_EQ(err.find("NCCL_IB_HCA"), std::string::npos) << "unknown names are skipped quietly: " << err;
  EXPECT_EQ(source(Id::ShmDisable), Source::Default);
  EXPECT_EQ(source(Id::BuffSize), Source::Default);
  EXPECT_EQ(getString(Id::ConfFile), path);  // from the environment only
}

TEST_F(ConfFile, MissingNamedFileWarns) {
  setenv("NCCL_CONF_FILE", (dir_ + "/absent.conf").c_str(), 1);
  const std::string err = reload();
  EXPECT_NE(err.find("Cannot read NCCL_CONF_FILE '" + dir_ + "/absent.conf'"), std::string::npos) << err;
  EXPECT_EQ(source(Id::BuffSize), Source::Default);
}

}  // namespace
}  // namespace atl::params
