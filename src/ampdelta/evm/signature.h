#pragma once

/// \file signature.h
/// \brief Event and function signatures as Amp's EVM functions take them
/// (`Transfer(address indexed from, address indexed to, uint256 value)`,
/// `function approve(address spender, uint256 value) returns (bool)`), their canonical
/// text and the hashes that identify them on chain.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/evm/sol_type.h"

namespace ampdelta::evm {

/// \brief An event: what a log's topics and data hold.
struct EventSignature {
  std::string name;
  std::vector<SolParam> params;  ///< in declaration order
  bool anonymous = false;

  /// \brief `Name(type,…)`: what topic0 hashes.
  std::string Canonical() const;
  /// \brief keccak256 of the canonical signature (an anonymous event has no topic0).
  std::array<uint8_t, 32> Topic0() const;
  std::vector<const SolParam*> Indexed() const;
  std::vector<const SolParam*> Body() const;
};

/// \brief Parse `[event] Name(type [indexed] [name], …) [anonymous]`. More than three
/// indexed parameters (topics 1–3) are an error, as in Amp.
arrow::Result<EventSignature> ParseEventSignature(std::string_view text);

/// \brief A function: what its calldata holds.
struct FunctionSignature {
  std::string name;
  std::vector<SolParam> inputs;
  std::vector<SolParam> outputs;

  std::string Canonical() const;
  /// \brief The first four bytes of keccak256 of the canonical signature.
  std::array<uint8_t, 4> Selector() const;
};

/// \brief Parse `[function] name(type [location] [name], …) [modifiers] [returns (…)]`.
arrow::Result<FunctionSignature> ParseFunctionSignature(std::string_view text);

}  // namespace ampdelta::evm
