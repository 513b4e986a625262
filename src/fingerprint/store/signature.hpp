#pragma once

// Checking an event's signature (Event::signer, Event::sig; README, "Signed
// records"). Whether the signer is trusted is the reader's to say
// (cmd/common.hpp); this says whether the signature holds.

#include <fingerprint/store/event.hpp>

#include <string>

namespace fingerprint::store {

struct SignatureCheck
{
  enum class State
  {
    none,    // unsigned
    valid,   // the signature is the signer's over the event as it reads now
    invalid, // it is not: the event was changed since, or the fields are damaged
  };
  State state = State::none;
  std::string signer; // the 32 raw public bytes, when the event names them
};

// The event's own signature, or, for a consumed event read from an input
// manifest, that of the produced event that names the manifest
// (Event::vouched_by), whose signature covers the manifest's digest.
SignatureCheck check_signature(const Event& event);

} // namespace fingerprint::store
