// The provider-independent parts of the cloud stores: ranged random access, multipart
// streamed uploads, settling an ambiguous create, retries and time parsing.

#include "ampdelta/storage/cloud_io.h"

#include <atomic>
#include <cstdlib>
#include <fstream>

#include <arrow/buffer.h>

#include "ampdelta/storage/aws_auth.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace ampdelta::storage {
namespace {

// Records what a multipart upload receives.
struct UploadLog {
  std::vector<std::string> parts;
  std::string completed_with;
  std::string whole;
  bool completed = false;
  bool aborted = false;
};

class RecordingUpload : public MultipartUpload {
 public:
  explicit RecordingUpload(UploadLog* log) : log_(log) {}
  arrow::Status UploadPart(const std::shared_ptr<arrow::Buffer>& part) override {
    log_->parts.push_back(part->ToString());
    return arrow::Status::OK();
  }
  arrow::Status Complete(const std::shared_ptr<arrow::Buffer>& last) override {
    log_->completed_with = last->ToString();
    log_->completed = true;
    return arrow::Status::OK();
  }
  arrow::Status Abort() override {
    log_->aborted = true;
    return arrow::Status::OK();
  }

 private:
  UploadLog* log_;
};

UploadFunctions Recording(UploadLog* log) {
  UploadFunctions upload;
  upload.put_whole = [log](const std::shared_ptr<arrow::Buffer>& data) {
    log->whole = data->ToString();
    return arrow::Status::OK();
  };
  upload.start_multipart = [log]() -> arrow::Result<std::unique_ptr<MultipartUpload>> {
    return std::make_unique<RecordingUpload>(log);
  };
  return upload;
}

TEST(MultipartOutputStreamTest, SmallObjectsGoInOneRequest) {
  UploadLog log;
  auto stream = MakeMultipartOutputStream(Recording(&log), 8);
  ASSERT_OK(stream->Write("abc", 3));
  ASSERT_OK(stream->Close());
  EXPECT_EQ(log.whole, "abc");
  EXPECT_TRUE(log.parts.empty());
}

TEST(MultipartOutputStreamTest, FullPartsUploadAsTheyFillAndTheRestCompletes) {
  UploadLog log;
  auto stream = MakeMultipartOutputStream(Recording(&log), 4);
  ASSERT_OK(stream->Write("abcdefghij", 10));
  EXPECT_EQ(log.parts, (std::vector<std::string>{"abcd", "efgh"}));
  ASSERT_OK_AND_ASSIGN(int64_t position, stream->Tell());
  EXPECT_EQ(position, 10);
  ASSERT_OK(stream->Close());
  EXPECT_TRUE(log.completed);
  EXPECT_EQ(log.completed_with, "ij");
  EXPECT_FALSE(log.aborted);
}

TEST(MultipartOutputStreamTest, DroppingAStreamAbortsItsUpload) {
  UploadLog log;
  {
    auto stream = MakeMultipartOutputStream(Recording(&log), 4);
    ASSERT_OK(stream->Write("abcdef", 6));
  }
  EXPECT_TRUE(log.aborted);
  EXPECT_FALSE(log.completed);
  EXPECT_TRUE(log.whole.empty());
}

class FailingUpload : public MultipartUpload {
 public:
  explicit FailingUpload(UploadLog* log) : log_(log) {}
  arrow::Status UploadPart(const std::shared_ptr<arrow::Buffer>&) override {
    return arrow::Status::IOError("injected part failure");
  }
  arrow::Status Complete(const std::shared_ptr<arrow::Buffer>&) override {
    log_->completed = true;
    return arrow::Status::OK();
  }
  arrow::Status Abort() override {
    log_->aborted = true;
    return arrow::Status::OK();
  }

 private:
  UploadLog* log_;
};

TEST(MultipartOutputStreamTest, AFailedPartFailsCloseAndNothingAppears) {
  UploadLog log;
  UploadFunctions upload = Recording(&log);
  upload.start_multipart = [&log]() -> arrow::Result<std::unique_ptr<MultipartUpload>> {
    return std::make_unique<FailingUpload>(&log);
  };
  auto stream = MakeMultipartOutputStream(upload, 4);
  EXPECT_FALSE(stream->Write("abcdef", 6).ok());
  EXPECT_TRUE(log.aborted);
  EXPECT_FALSE(stream->Close().ok()) << "a failed stream must not report success";
  EXPECT_FALSE(log.completed);
  EXPECT_TRUE(log.whole.empty());
}

TEST(MultipartOutputStreamTest, AFailedStartFailsCloseInsteadOfWritingTheFirstPartAlone) {
  UploadLog log;
  UploadFunctions upload = Recording(&log);
  upload.start_multipart = []() -> arrow::Result<std::unique_ptr<MultipartUpload>> {
    return arrow::Status::IOError("injected start failure");
  };
  auto stream = MakeMultipartOutputStream(upload, 4);
  EXPECT_FALSE(stream->Write("abcdef", 6).ok());
  EXPECT_FALSE(stream->Close().ok());
  EXPECT_TRUE(log.whole.empty()) << "no truncated object under the final name";
}

TEST(RangedInputFileTest, ReadsAreClippedToTheObjectAndPositionsAdvance) {
  const std::string content = "0123456789";
  std::atomic<int> requests{0};
  auto file = MakeRangedInputFile(
      [&](int64_t offset,
          int64_t length) -> arrow::Result<std::shared_ptr<arrow::Buffer>> {
        ++requests;
        return arrow::Buffer::FromString(
            content.substr(static_cast<size_t>(offset), static_cast<size_t>(length)));
      },
      static_cast<int64_t>(content.size()));
  ASSERT_OK_AND_ASSIGN(auto tail, file->ReadAt(7, 100));
  EXPECT_EQ(tail->ToString(), "789");
  ASSERT_OK_AND_ASSIGN(auto past, file->ReadAt(20, 5));
  EXPECT_EQ(past->size(), 0);
  ASSERT_OK(file->Seek(4));
  ASSERT_OK_AND_ASSIGN(auto next, file->Read(2));
  EXPECT_EQ(next->ToString(), "45");
  ASSERT_OK_AND_ASSIGN(int64_t position, file->Tell());
  EXPECT_EQ(position, 6);
  EXPECT_EQ(requests.load(), 2) << "a read past the end needs no request";
}

TEST(RangedInputFileTest, AShortReplyIsAnErrorNotAShortRead) {
  auto file = MakeRangedInputFile(
      [](int64_t, int64_t) -> arrow::Result<std::shared_ptr<arrow::Buffer>> {
        return arrow::Buffer::FromString("ab");
      },
      10);
  EXPECT_FALSE(file->ReadAt(0, 5).ok());
  char out[4];
  EXPECT_FALSE(file->ReadAt(0, 4, out).ok());
}

TEST(HttpTimeTest, ParsesHttpDatesAndRfc3339) {
  EXPECT_EQ(ParseHttpOrIsoTime("Fri, 24 May 2013 00:00:00 GMT"), 1369353600000);
  EXPECT_EQ(ParseHttpOrIsoTime("2013-05-24T00:00:01.250Z"), 1369353601250);
  EXPECT_EQ(ParseHttpOrIsoTime("2013-05-24T00:00:01Z"), 1369353601000);
  EXPECT_EQ(ParseHttpOrIsoTime("yesterday"), 0);
}

TEST(RetryTest, RetryableStatusesAreThrottlingAndServerErrors) {
  for (int status : {408, 429, 500, 502, 503, 504})
    EXPECT_TRUE(IsRetryableStatus(status)) << status;
  for (int status : {200, 400, 403, 404, 409, 412, 501}) {
    EXPECT_FALSE(IsRetryableStatus(status)) << status;
  }
}

// Clears the AWS credential variables for one test (ctest runs each test in its own
// process; the values are restored anyway), so the test sees only the options it passes.
class WithoutAwsEnvironment {
 public:
  WithoutAwsEnvironment() {
    for (const char* name : kNames) {
      if (const char* value = std::getenv(name)) saved_.emplace_back(name, value);
      ::unsetenv(name);
    }
  }
  ~WithoutAwsEnvironment() {
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  static constexpr const char* kNames[] = {"AWS_ACCESS_KEY_ID",
                                           "AWS_SECRET_ACCESS_KEY",
                                           "AWS_SESSION_TOKEN",
                                           "AWS_TOKEN",
                                           "AWS_PROFILE",
                                           "AWS_DEFAULT_PROFILE",
                                           "AWS_WEB_IDENTITY_TOKEN_FILE",
                                           "AWS_ROLE_ARN"};
  std::vector<std::pair<std::string, std::string>> saved_;
};

TEST(AwsCredentialProviderTest, StaticKeysComeFirstAndHalfAPairIsAnError) {
  WithoutAwsEnvironment clean;
  auto client = std::make_shared<HttpClient>(std::chrono::milliseconds(100),
                                             std::chrono::milliseconds(1000));
  ASSERT_OK_AND_ASSIGN(auto provider,
                       AwsCredentialProvider::Make({{"aws_access_key_id", "AKID"},
                                                    {"AWS_SECRET_ACCESS_KEY", "secret"},
                                                    {"AWS_SESSION_TOKEN", "token"}},
                                                   client));
  EXPECT_EQ(provider->source(), "static keys");
  ASSERT_OK_AND_ASSIGN(AwsCredentials credentials, provider->Get());
  EXPECT_EQ(credentials.access_key_id, "AKID");
  EXPECT_EQ(credentials.session_token, "token");
  EXPECT_THAT(AwsCredentialProvider::Make({{"AWS_ACCESS_KEY_ID", "AKID"}}, client),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
}

TEST(AwsCredentialProviderTest, ProfilesAreReadFromTheSharedCredentialsFile) {
  WithoutAwsEnvironment clean;
  testing::TempDir dir;
  const std::string file = dir.path() + "/credentials";
  std::ofstream(file)
      << "[default]\naws_access_key_id = DEFAULTKEY\naws_secret_access_key = d\n\n"
         "# a comment\n[loader]\n aws_access_key_id=LOADERKEY \n"
         "aws_secret_access_key = l\naws_session_token = t\n";
  auto client = std::make_shared<HttpClient>(std::chrono::milliseconds(100),
                                             std::chrono::milliseconds(1000));
  const std::map<std::string, std::string> base = {
      {"AWS_SHARED_CREDENTIALS_FILE", file}, {"AWS_CONFIG_FILE", dir.path() + "/none"}};
  auto options = base;
  options["AWS_PROFILE"] = "loader";
  ASSERT_OK_AND_ASSIGN(auto provider, AwsCredentialProvider::Make(options, client));
  EXPECT_EQ(provider->source(), "profile loader");
  ASSERT_OK_AND_ASSIGN(AwsCredentials loader, provider->Get());
  EXPECT_EQ(loader.access_key_id, "LOADERKEY");
  EXPECT_EQ(loader.secret_access_key, "l");
  EXPECT_EQ(loader.session_token, "t");
  ASSERT_OK_AND_ASSIGN(auto fallback, AwsCredentialProvider::Make(base, client));
  EXPECT_EQ(fallback->source(), "profile default");
  options["AWS_PROFILE"] = "missing";
  EXPECT_THAT(AwsCredentialProvider::Make(options, client),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
}

}  // namespace
}  // namespace ampdelta::storage
