#pragma once

// export --format cyclonedx: what a build's products were made from, as a
// CycloneDX 1.5 bill of materials.

#include <fingerprint/store/event.hpp>
#include <fingerprint/store/store.hpp>

#include <nlohmann/json.hpp>

#include <vector>

namespace fingerprint::cmd {

// The BOM of the build `ref`, from its index's `events` (with its products'
// manifest inputs): the build is the metadata's component, its products
// (and the installed copies `installed` asked about) its files. Every file
// it consumed is a component, grouped by origin: the fingerprinted project
// and version that produced or installed it, the Debian package and version
// that installed it, else on its own. Each has its digest as a hash. The
// dependencies are the build's on each group and file, and a project's on
// the groups its products were made from.
nlohmann::ordered_json cyclonedx(const store::Store& store,
                                 const store::BuildRef& ref,
                                 const std::vector<store::Event>& events,
                                 const std::vector<store::Event>& installed);

} // namespace fingerprint::cmd
