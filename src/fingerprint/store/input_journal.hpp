#pragma once

// The reverse index's journal: inputs/<algorithm>/journal.
//
// Storing a manifest once appended one line to the reverse index of each
// of its inputs, a file per input: a link that read 150 headers made 150
// files' worth of opens, locks and writes, about half of a trivial link
// hook's system calls. Now it appends one line to the journal instead,
// naming the manifest and its inputs, and the journal is folded into the
// reverse index files once it outgrows k_journal_fold_bytes: one append
// per input for all the manifests it holds (a system header that 200 links
// read gets one line per fold, in one write, not 200 writes).
//
// Readers read the journal before the reverse index files: a fold appends
// to those before it removes the journal, so a reader that finds the
// journal gone finds its lines folded. The fold holds the journal's
// exclusive lock, appenders hold it shared for their write alone and find
// the journal's name gone after a fold (they start a new one). A fold that
// dies part way leaves the journal, and the next fold appends its lines
// again: readers already fold repeated lines. A manifest's lines go before
// the manifest, as they did in the reverse index files.

#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/manifest.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::store {

// A journal longer than this is folded by the writer that made it so.
// About 120 manifests of a 130-input link; a reader parses it in a few ms.
inline constexpr size_t k_journal_fold_bytes = 1024 * 1024;

// One journal line, without its newline: the raw digests of the manifest
// and of each of its inputs (once each, in the manifest's order), one after
// the other, escaped as a reverse index line is (reverse_line(): each
// newline byte as a backslash and an 'n', each backslash as two). As
// compact as the reverse index lines it stands for: about 33 bytes an input
// for SHA-256, where hex would take 65.
std::string journal_line(const DigestKey& key, const Manifest& manifest);

// One line of a journal as read: views into JournalContents::hex.
struct JournalEntry
{
  std::string_view manifest;            // its hex
  std::vector<std::string_view> inputs; // their hex
  size_t line = 0;                      // 1-based
};

struct JournalContents
{
  std::string hex; // every digest read, in hex; the entries' views point into it
  std::vector<JournalEntry> entries;
  std::vector<size_t> unreadable; // line numbers of lines that are not journal lines
  bool torn_tail = false;         // a last line without its newline (a writer that died mid-write)

  JournalContents() = default;
  JournalContents(const JournalContents&) = delete; // the views would point into the other's `hex`
  JournalContents& operator=(const JournalContents&) = delete;
  JournalContents(JournalContents&&) = default; // a heap buffer moves with its string
  JournalContents& operator=(JournalContents&&) = default;
};

// Reads a journal's text: each line the escaped raw digests of
// `algorithm`, a manifest's and at least one input's.
JournalContents parse_journal(std::string_view text, digest::Algorithm algorithm);

// Reads one complete line, given without its newline: one entry, or one
// unreadable line (number 1).
JournalContents parse_journal_line(std::string_view line, digest::Algorithm algorithm);

} // namespace fingerprint::store
