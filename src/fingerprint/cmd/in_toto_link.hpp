#pragma once

// export --format in-toto-link: what a build recorded, as the signed link
// metadata in-toto's own tools read (in-toto-verify checks a supply chain's
// links against a layout). One link per target of the build, in the
// "metablock" form of in-toto 1.x: the link under "signed", each signature
// an Ed25519 signature over the link's canonical JSON, by a key named the
// way its securesystemslib names keys.

#include <fingerprint/digest/signing.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/store/store.hpp>
#include <fingerprint/util/expected.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::cmd {

// `value` in the canonical JSON securesystemslib signs (its
// encode_canonical): object keys sorted, no whitespace, only `"` and `\`
// escaped in strings, integers only (a float is an error).
Expected<std::string> canonical_json(const nlohmann::json& value);

// securesystemslib's id of the Ed25519 key whose raw public bytes are
// `raw_public`: the SHA-256 of the canonical JSON of its public metadata
// ({"keyid_hash_algorithms": ["sha256", "sha512"], "keytype": "ed25519",
// "keyval": {"public": <hex>}, "scheme": "ed25519"}).
std::string in_toto_key_id(std::string_view raw_public);

struct InTotoLink
{
  std::string name;      // "<project>.<target>", the step name a layout gives it
  std::string file_name; // "<name>.<first 8 of the key id>.link", where in-toto-verify looks
  nlohmann::json metablock;
};

// The links of build `ref`, from its index's `events` (with its products'
// manifest inputs), each signed with `key`: per target, its products are
// the files it produced and their installed copies, its materials what it
// consumed (every role) and the files its install step copied.
Expected<std::vector<InTotoLink>> in_toto_links(const store::BuildRef& ref,
                                                const std::vector<store::Event>& events,
                                                const digest::SigningKey& key);

} // namespace fingerprint::cmd
