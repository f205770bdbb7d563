#include "ampdelta/storage/fault_store.h"

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>

#include "ampdelta/util/status.h"

namespace ampdelta::storage {
namespace {

template <typename Decision>
arrow::Status Injected(const Decision& decision, const std::string& path) {
  if (decision.not_found) return NotFoundError(decision.message, " (", path, ")");
  return MakeError(ErrorCode::kStorageError, arrow::StatusCode::IOError, decision.message,
                   " (", path, ")")
      .WithDetail(
          std::make_shared<ErrorDetail>(ErrorCode::kStorageError, decision.subcode));
}

}  // namespace

void FaultStore::AddRule(FaultRule rule) {
  std::lock_guard<std::mutex> lock(mutex_);
  rules_.push_back({std::move(rule), 0});
}

void FaultStore::ClearRules() {
  std::lock_guard<std::mutex> lock(mutex_);
  rules_.clear();
}

int64_t FaultStore::calls(StoreOp op) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_[static_cast<int>(op)];
}

FaultStore::Decision FaultStore::Check(StoreOp op, const std::string& path) {
  std::function<void()> before;
  Decision decision;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++calls_[static_cast<int>(op)];
    for (auto& active : rules_) {
      const FaultRule& rule = active.rule;
      if (rule.op != op) continue;
      if (!rule.path_contains.empty() &&
          path.find(rule.path_contains) == std::string::npos) {
        continue;
      }
      ++active.matched;
      if (rule.nth == 0 || active.matched == rule.nth) {
        ++fired_;
        before = rule.before;
        decision = Decision{rule.fail, rule.fail && rule.lose_reply, rule.message,
                            rule.not_found, rule.subcode};
        break;
      }
    }
  }
  if (before) before();
  return decision;
}

arrow::Result<ObjectMeta> FaultStore::Head(const std::string& path) {
  Decision decision = Check(StoreOp::kHead, path);
  if (decision.fail && !decision.lose_reply) return Injected(decision, path);
  auto result = inner_->Head(path);
  if (decision.fail) return Injected(decision, path);
  return result;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> FaultStore::Get(const std::string& path) {
  Decision decision = Check(StoreOp::kGet, path);
  if (decision.fail) return Injected(decision, path);
  return inner_->Get(path);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> FaultStore::GetRange(
    const std::string& path, int64_t offset, int64_t length) {
  Decision decision = Check(StoreOp::kGet, path);
  if (decision.fail) return Injected(decision, path);
  return inner_->GetRange(path, offset, length);
}

arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> FaultStore::OpenInputFile(
    const std::string& path) {
  Decision decision = Check(StoreOp::kOpenInputFile, path);
  if (decision.fail) return Injected(decision, path);
  return inner_->OpenInputFile(path);
}

arrow::Result<std::vector<ObjectMeta>> FaultStore::List(const std::string& prefix,
                                                        const std::string& start_after) {
  Decision decision = Check(StoreOp::kList, prefix);
  if (decision.fail) return Injected(decision, prefix);
  return inner_->List(prefix, start_after);
}

arrow::Status FaultStore::Put(const std::string& path,
                              const std::shared_ptr<arrow::Buffer>& data, PutMode mode) {
  Decision decision = Check(StoreOp::kPut, path);
  if (decision.fail && !decision.lose_reply) return Injected(decision, path);
  ARROW_RETURN_NOT_OK(inner_->Put(path, data, mode));
  if (decision.fail) return Injected(decision, path);
  return arrow::Status::OK();
}

arrow::Status FaultStore::Delete(const std::string& path) {
  Decision decision = Check(StoreOp::kDelete, path);
  if (decision.fail && !decision.lose_reply) return Injected(decision, path);
  ARROW_RETURN_NOT_OK(inner_->Delete(path));
  if (decision.fail) return Injected(decision, path);
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::io::OutputStream>> FaultStore::OpenOutputStream(
    const std::string& path) {
  Decision decision = Check(StoreOp::kOpenOutputStream, path);
  if (decision.fail) return Injected(decision, path);
  return inner_->OpenOutputStream(path);
}

}  // namespace ampdelta::storage
