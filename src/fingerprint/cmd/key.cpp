// key generate: an Ed25519 signing key for signed records (README, "Signed
// records"), mode 0600, and its public half to hand to whoever verifies.

#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/digest/signing.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"output", OptionKind::value, "FILE", "where to write the private key (default: the config directory's)"},
};

std::string
default_key_path()
{
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/fingerprint/signing-key.pem";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.config/fingerprint/signing-key.pem";
}

int
validate(const Args& args, Context& context)
{
  if (args.positional().size() != 1 || args.positional().front() != "generate") {
    print_error(context, "key: usage: fingerprint key generate [--output FILE]");
    return k_exit_usage;
  }
  return k_exit_ok;
}

int
run(const Args& args, Context& context, Prepared& /*prepared*/)
{
  const std::string path = args.value("output").value_or(default_key_path());
  auto key = digest::SigningKey::generate();
  auto pem = key ? key->private_pem() : Expected<std::string>(key.error());
  auto public_pem = key ? key->public_pem() : Expected<std::string>(key.error());
  if (!pem || !public_pem) {
    print_error(context, "key generate: " + (!pem ? pem : public_pem).error().message);
    return k_exit_failure;
  }
  if (const auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    if (auto made = util::open_directory(path.substr(0, slash), true, 0700); !made) {
      print_error(context, "key generate: " + path.substr(0, slash) + ": " + made.error().message);
      return k_exit_failure;
    }
  }
  // Never over a key that exists: records signed with it would be orphaned.
  util::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    print_error(context,
                "key generate: " + path + ": "
                  + (errno == EEXIST ? std::string("a key is there already (give --output FILE for another)")
                                     : util::errno_text(errno)));
    return k_exit_failure;
  }
  if (auto written = util::write_all(fd.get(), *pem); !written || ::fsync(fd.get()) != 0) {
    fd.reset();
    ::unlink(path.c_str());
    print_error(context, "key generate: " + path + ": cannot be written");
    return k_exit_failure;
  }
  write_out(context,
            "# private key: " + path + " (mode 0600; sign with FINGERPRINT_SIGNING_KEY=" + path + ")\n"
              + "# key id: " + digest::key_id(key->raw_public())
              + "\n# the public key, for verifiers' trusted-keys directories:\n" + *public_pem);
  return k_exit_ok;
}

} // namespace

extern const Command k_key_command{.name = "key",
                                   .synopsis = "generate [--output FILE]",
                                   .summary =
                                     "make an Ed25519 signing key for signed records, and print its public key",
                                   .options = k_options,
                                   .run = run,
                                   .arity = {1, 1, "usage: fingerprint key generate [--output FILE]"},
                                   .validate = validate};

} // namespace fingerprint::cmd
