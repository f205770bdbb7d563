// Request signing of the cloud stores, against published or independently computed
// vectors.

#include <arrow/buffer.h>
#include <arrow/util/base64.h>

#include "ampdelta/storage/aws_auth.h"
#include "ampdelta/storage/azure_store.h"
#include "ampdelta/storage/http_client.h"
#include "tests/support/test_util.h"

namespace ampdelta::storage {
namespace {

constexpr int64_t k20130524 = 1369353600;  // 2013-05-24T00:00:00Z

TEST(AwsSigV4Test, MatchesTheGetObjectExampleOfTheS3Documentation) {
  // "Example: GET Object" of the S3 SigV4 header-authentication documentation.
  HttpRequest request;
  request.method = "GET";
  request.origin = "https://examplebucket.s3.amazonaws.com";
  request.path = "/test.txt";
  request.SetHeader("Range", "bytes=0-9");
  const AwsCredentials credentials{"AKIAIOSFODNN7EXAMPLE",
                                   "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "", 0};
  SignAwsV4(&request, credentials, "us-east-1", "s3",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            k20130524);
  EXPECT_EQ(request.Header("x-amz-date"), "20130524T000000Z");
  EXPECT_EQ(request.Header("Authorization"),
            "AWS4-HMAC-SHA256 "
            "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(AwsSigV4Test, SessionTokensAreSentAndSigned) {
  HttpRequest request;
  request.method = "PUT";
  request.origin = "http://127.0.0.1:9000";
  request.path = "/bucket/key";
  SignAwsV4(&request, AwsCredentials{"AKID", "secret", "the-session-token", 0},
            "eu-west-1", "s3", kUnsignedPayload, k20130524);
  EXPECT_EQ(request.Header("x-amz-security-token"), "the-session-token");
  EXPECT_EQ(request.Header("x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  EXPECT_THAT(request.Header("Authorization"),
              ::testing::HasSubstr("SignedHeaders=host;x-amz-content-sha256;x-amz-date;"
                                   "x-amz-security-token,"));
  EXPECT_THAT(request.Header("Authorization"),
              ::testing::HasSubstr("Credential=AKID/20130524/eu-west-1/s3/aws4_request"));
}

// Vectors computed by the independent Python signer in tests/interop/emulator_azure.py,
// whose string-to-sign matched what Azurite logged for the same request.
constexpr const char* kAzuriteKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
    "KBHBeksoGMGw==";

TEST(AzureSharedKeyTest, ConditionalPutBlobMatchesTheReferenceSigner) {
  HttpRequest request;
  request.method = "PUT";
  request.origin = "http://127.0.0.1:10000";
  request.path = "/devstoreaccount1/delta/t/_delta_log/00000000000000000001.json";
  request.body = arrow::Buffer::FromString(std::string(33, 'x'));
  request.SetHeader("x-ms-date", "Sun, 29 Nov 2026 19:14:17 GMT");
  request.SetHeader("x-ms-version", "2021-08-06");
  request.SetHeader("x-ms-blob-type", "BlockBlob");
  request.SetHeader("Content-Type", "application/octet-stream");
  request.SetHeader("If-None-Match", "*");
  EXPECT_EQ(AzureSharedKeyAuthorization(request, "devstoreaccount1",
                                        *arrow::util::base64_decode(kAzuriteKey)),
            "SharedKey devstoreaccount1:BKUUvVOnpmxp8ADa6pWux7baVPyyfHYtzEW1322ipEo=");
}

TEST(AzureSharedKeyTest, ListingQueryParametersAreCanonicalisedDecodedAndSorted) {
  HttpRequest request;
  request.method = "GET";
  request.origin = "http://127.0.0.1:10000";
  request.path = "/devstoreaccount1/delta";
  request.query = {{"restype", "container"},
                   {"comp", "list"},
                   {"prefix", "t/_delta_log/"},
                   {"marker", "t/a b"},
                   {"maxresults", "3"}};
  request.SetHeader("x-ms-date", "Sun, 29 Nov 2026 19:14:17 GMT");
  request.SetHeader("x-ms-version", "2021-08-06");
  EXPECT_EQ(AzureSharedKeyAuthorization(request, "devstoreaccount1",
                                        *arrow::util::base64_decode(kAzuriteKey)),
            "SharedKey devstoreaccount1:pyD0/icJk+wir7FJoElfL/N9XM7YCAPueXFR1pwintQ=");
}

TEST(UriEncodeTest, KeepsUnreservedCharactersAndOptionallySlashes) {
  EXPECT_EQ(UriEncode("x=A%2FA/y=b b/é~-_.", true), "x%3DA%252FA/y%3Db%20b/%C3%A9~-_.");
  EXPECT_EQ(UriEncode("a/b", false), "a%2Fb");
  EXPECT_EQ(UriDecode("a%2Fb%20c%zz%4"), "a/b c%zz%4");
}

}  // namespace
}  // namespace ampdelta::storage
