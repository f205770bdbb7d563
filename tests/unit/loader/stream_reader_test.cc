#include "ampdelta/loader/stream/stream_reader.h"

#include <thread>

#include <gtest/gtest.h>

namespace ampdelta::loader {
namespace {

using std::chrono::milliseconds;

TEST(MessageQueueTest, PopTimesOutEmptyAndReturnsMessagesInOrder) {
  MessageQueue queue;
  EXPECT_FALSE(queue.Pop(milliseconds(1)).has_value());
  queue.Push(StreamMessage(std::optional<amp::ResponseBatch>{}));
  queue.Push(StreamMessage(arrow::Status::IOError("gone")));
  auto end = queue.Pop(milliseconds(1));
  ASSERT_TRUE(end.has_value());
  ASSERT_TRUE(end->ok());
  EXPECT_FALSE(end->ValueUnsafe().has_value());
  auto failure = queue.Pop(milliseconds(1));
  ASSERT_TRUE(failure.has_value());
  EXPECT_TRUE(failure->status().IsIOError());
}

TEST(MessageQueueTest, CloseReleasesAPushWaitingForSpace) {
  MessageQueue queue;
  std::thread producer([&] {
    for (int i = 0; i < 100; ++i)
      queue.Push(StreamMessage(std::optional<amp::ResponseBatch>{}));
  });
  std::this_thread::sleep_for(
      milliseconds(20));  // the producer fills the queue and waits
  queue.Close();
  producer.join();  // would hang if Close did not release it
  int popped = 0;
  while (queue.Pop(milliseconds(1)).has_value()) ++popped;
  EXPECT_LT(popped, 100);
  EXPECT_GT(popped, 0);
}

}  // namespace
}  // namespace ampdelta::loader
