#include <fingerprint/digest/signing.hpp>
#include <fingerprint/store/signature.hpp>

namespace fingerprint::store {

SignatureCheck
check_signature(const Event& event)
{
  if (event.signer.empty() && event.sig.empty() && !event.vouched_by.line.empty()) {
    auto voucher = parse_event(event.vouched_by.line);
    if (!voucher) {
      return {SignatureCheck::State::invalid, {}};
    }
    voucher->vouched_by.line.clear();
    return check_signature(*voucher);
  }
  if (event.signer.empty() && event.sig.empty()) {
    return {};
  }
  auto signer = digest::base64_decode(event.signer);
  auto sig = digest::base64_decode(event.sig);
  if (!signer || !sig || signer->size() != 32) {
    return {SignatureCheck::State::invalid, signer && signer->size() == 32 ? *signer : std::string()};
  }
  const bool valid = digest::verify_signature(*signer, signed_form(event), *sig);
  return {valid ? SignatureCheck::State::valid : SignatureCheck::State::invalid, std::move(*signer)};
}

} // namespace fingerprint::store
