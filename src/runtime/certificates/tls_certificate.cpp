#include "runtime/certificates/tls_certificate.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/ssl/context.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>
#include <span>

#include "base/text.h"

namespace myop::runtime {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* pointer) const { Free(pointer); }
};
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using X509Pointer = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using KeyPointer = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Names = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES, GENERAL_NAMES_free>>;

kube::Error invalid(std::string message) {
  return kube::make_error(kube::Reason::InvalidConfiguration, std::move(message));
}

// The newest OpenSSL error queue entry as text (and the queue emptied), for messages.
std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  std::array<char, 256> text{};
  ERR_error_string_n(code, text.data(), text.size());
  return text.data();
}

Bio memory(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio, &data);
  return length > 0 ? std::string(data, static_cast<std::size_t>(length)) : std::string();
}

std::string name_text(const X509_NAME* name) {
  Bio bio(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253);
  return bio_text(bio.get());
}

std::vector<std::string> alternative_names(X509* certificate) {
  std::vector<std::string> names;
  Names general(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr)));
  if (!general) return names;
  for (int i = 0; i < sk_GENERAL_NAME_num(general.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(general.get(), i);
    if (name->type == GEN_DNS) {
      const auto* text = name->d.dNSName;
      names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                         static_cast<std::size_t>(ASN1_STRING_length(text)));
    } else if (name->type == GEN_IPADD) {
      const auto* address = name->d.iPAddress;
      std::array<char, INET6_ADDRSTRLEN> text{};
      const int family = ASN1_STRING_length(address) == 4 ? AF_INET : AF_INET6;
      if (inet_ntop(family, ASN1_STRING_get0_data(address), text.data(), text.size()))
        names.emplace_back(text.data());
    }
  }
  return names;
}

std::chrono::system_clock::time_point time_point(const ASN1_TIME* time) {
  std::tm utc{};
  if (ASN1_TIME_to_tm(time, &utc) != 1) return {};
  return std::chrono::system_clock::from_time_t(timegm(&utc));
}

CertificateDescription describe(X509* certificate) {
  CertificateDescription description;
  description.subject = name_text(X509_get_subject_name(certificate));
  if (BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(certificate), nullptr)) {
    char* hex = BN_bn2hex(serial);
    description.serial = hex ? hex : "";
    OPENSSL_free(hex);
    BN_free(serial);
  }
  {
    Bio bio(BIO_new(BIO_s_mem()));
    ASN1_TIME_print(bio.get(), X509_get0_notAfter(certificate));
    description.not_after = bio_text(bio.get());
  }
  description.expired = X509_cmp_current_time(X509_get0_notAfter(certificate)) < 0;
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (X509_digest(certificate, EVP_sha256(), digest.data(), &length) == 1) {
    description.sha256_fingerprint =
        base::to_hex(std::span(digest.data(), length), {.upper_case = true, .separator = ":"});
  }
  description.names = alternative_names(certificate);
  description.certificate_authority = X509_check_ca(certificate) != 0;
  description.valid_from = time_point(X509_get0_notBefore(certificate));
  description.valid_until = time_point(X509_get0_notAfter(certificate));
  return description;
}

bool is_ip_address(const std::string& name) {
  std::array<unsigned char, 16> buffer{};
  return inet_pton(AF_INET, name.c_str(), buffer.data()) == 1 ||
         inet_pton(AF_INET6, name.c_str(), buffer.data()) == 1;
}

}  // namespace

kube::Result<CertificateDescription> inspect_certificate_pair(const CertificatePair& pair) {
  ERR_clear_error();
  if (pair.certificate_pem.empty()) return invalid("the certificate file is empty");
  if (pair.key_pem.empty()) return invalid("the private key file is empty");
  Bio certificate_bio = memory(pair.certificate_pem);
  X509Pointer certificate(PEM_read_bio_X509(certificate_bio.get(), nullptr, nullptr, nullptr));
  if (!certificate) return invalid("the certificate is not a PEM X.509 certificate: " + openssl_error());
  Bio key_bio = memory(pair.key_pem);
  KeyPointer key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!key) return invalid("the private key is not an unencrypted PEM private key: " + openssl_error());
  if (X509_check_private_key(certificate.get(), key.get()) != 1) {
    ERR_clear_error();
    return invalid("the private key does not belong to the certificate (" +
                   name_text(X509_get_subject_name(certificate.get())) + ")");
  }
  return describe(certificate.get());
}

kube::Result<std::shared_ptr<boost::asio::ssl::context>> make_server_tls_context(
    const CertificatePair& pair) {
  auto checked = inspect_certificate_pair(pair);
  if (!checked) return std::move(checked).error();
  namespace ssl = boost::asio::ssl;
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code error;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                           ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::no_compression |
                           ssl::context::single_dh_use,
                       error);
  if (error) return invalid("cannot set the TLS options: " + error.message());
  SSL_CTX* native = context->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TICKET);
  // TLS 1.2: forward secrecy (ECDHE) and authenticated encryption (GCM, ChaCha20-Poly1305) only; no
  // CBC, no static RSA key exchange. TLS 1.3's suites, OpenSSL's defaults, are all of that kind.
  if (SSL_CTX_set_cipher_list(native, kServerTls12Ciphers) != 1)
    return invalid("cannot set the TLS 1.2 ciphers: " + openssl_error());
  // No session resumption: no tickets (TLS 1.2 and 1.3) and no server-side session cache, so a client
  // cannot make the server keep state for it past its connection. Clients that matter here (the API
  // server, Prometheus) keep their connections alive.
  SSL_CTX_set_num_tickets(native, 0);
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
  context->use_certificate_chain(boost::asio::buffer(pair.certificate_pem), error);
  if (error) return invalid("cannot use the certificate: " + error.message());
  context->use_private_key(boost::asio::buffer(pair.key_pem), ssl::context::pem, error);
  if (error) return invalid("cannot use the private key: " + error.message());
  if (SSL_CTX_check_private_key(context->native_handle()) != 1)
    return invalid("the private key does not belong to the certificate: " + openssl_error());
  return context;
}

kube::Result<CertificateDescription> describe_served_certificate(boost::asio::ssl::context& context) {
  X509* certificate = SSL_CTX_get0_certificate(context.native_handle());
  if (certificate == nullptr) return invalid("the TLS context serves no certificate");
  return describe(certificate);
}

kube::Result<CertificatePair> issue_certificate(const CertificateSpec& spec, const CertificatePair* issuer) {
  if (spec.names.empty()) return invalid("a certificate needs at least one name");
  if (spec.validity.count() <= 0) return invalid("a certificate needs a validity of more than 0 s");
  ERR_clear_error();
  X509Pointer issuer_certificate;
  KeyPointer issuer_key;
  if (issuer != nullptr) {
    Bio certificate_bio = memory(issuer->certificate_pem);
    issuer_certificate.reset(PEM_read_bio_X509(certificate_bio.get(), nullptr, nullptr, nullptr));
    Bio key_bio = memory(issuer->key_pem);
    issuer_key.reset(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
    if (!issuer_certificate || !issuer_key)
      return invalid("the issuer's certificate or key does not parse: " + openssl_error());
    if (X509_check_private_key(issuer_certificate.get(), issuer_key.get()) != 1) {
      ERR_clear_error();
      return invalid("the issuer's key does not belong to its certificate");
    }
    if (X509_check_ca(issuer_certificate.get()) == 0) return invalid("the issuer's certificate is not a CA");
  }
  KeyPointer key(EVP_EC_gen("P-256"));
  if (!key) return invalid("cannot generate an ECDSA key: " + openssl_error());

  X509Pointer certificate(X509_new());
  X509_set_version(certificate.get(), 2);  // X.509 v3
  std::array<unsigned char, 16> serial_bytes{};
  if (RAND_bytes(serial_bytes.data(), static_cast<int>(serial_bytes.size())) != 1)
    return invalid("cannot draw a random serial: " + openssl_error());
  serial_bytes[0] &= 0x7f;  // positive
  BIGNUM* serial = BN_bin2bn(serial_bytes.data(), static_cast<int>(serial_bytes.size()), nullptr);
  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(certificate.get()));
  BN_free(serial);
  const long skew = std::min<long>(60L * 60, static_cast<long>(spec.validity.count() / 4));
  X509_gmtime_adj(X509_getm_notBefore(certificate.get()), -skew);
  X509_gmtime_adj(X509_getm_notAfter(certificate.get()), static_cast<long>(spec.validity.count()));
  X509_set_pubkey(certificate.get(), key.get());
  X509_NAME* subject = X509_get_subject_name(certificate.get());
  if (!spec.organization.empty()) {
    X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(spec.organization.c_str()), -1, -1, 0);
  }
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(spec.names[0].c_str()), -1, -1, 0);
  X509* signer = issuer_certificate ? issuer_certificate.get() : certificate.get();
  X509_set_issuer_name(certificate.get(), X509_get_subject_name(signer));

  std::vector<std::pair<int, std::string>> extensions;
  if (spec.certificate_authority) {
    extensions = {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                  {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
                  {NID_subject_key_identifier, "hash"}};
  } else {
    std::string alternatives;
    for (const std::string& name : spec.names) {
      if (!alternatives.empty()) alternatives += ",";
      alternatives += (is_ip_address(name) ? "IP:" : "DNS:") + name;
    }
    extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                  {NID_key_usage, "critical,digitalSignature"},
                  {NID_ext_key_usage, "serverAuth"},
                  {NID_subject_alt_name, alternatives}};
    if (issuer_certificate) extensions.emplace_back(NID_authority_key_identifier, "keyid:always");
  }
  X509V3_CTX extension_context;
  X509V3_set_ctx_nodb(&extension_context);
  X509V3_set_ctx(&extension_context, signer, certificate.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] : extensions) {
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &extension_context, nid, value.c_str());
    if (!extension)
      return invalid("cannot build the certificate extension " + value + ": " + openssl_error());
    X509_add_ext(certificate.get(), extension, -1);
    X509_EXTENSION_free(extension);
  }
  EVP_PKEY* signing_key = issuer_key ? issuer_key.get() : key.get();
  if (X509_sign(certificate.get(), signing_key, EVP_sha256()) == 0)
    return invalid("cannot sign the certificate: " + openssl_error());

  CertificatePair pair;
  Bio certificate_out(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(certificate_out.get(), certificate.get());
  pair.certificate_pem = bio_text(certificate_out.get());
  Bio key_out(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(key_out.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  pair.key_pem = bio_text(key_out.get());
  return pair;
}

bool issued_by(const std::string& certificate_pem, const std::string& issuer_pem) {
  Bio certificate_bio = memory(certificate_pem);
  X509Pointer certificate(PEM_read_bio_X509(certificate_bio.get(), nullptr, nullptr, nullptr));
  Bio issuer_bio = memory(issuer_pem);
  X509Pointer issuer(PEM_read_bio_X509(issuer_bio.get(), nullptr, nullptr, nullptr));
  const bool signed_by = certificate && issuer &&
                         X509_check_issued(issuer.get(), certificate.get()) == X509_V_OK &&
                         X509_verify(certificate.get(), X509_get0_pubkey(issuer.get())) == 1;
  ERR_clear_error();
  return signed_by;
}

kube::Result<std::vector<CertificateDescription>> describe_certificates(const std::string& pem) {
  ERR_clear_error();
  std::vector<CertificateDescription> descriptions;
  Bio bio = memory(pem);
  while (true) {
    X509Pointer certificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!certificate) break;
    descriptions.push_back(describe(certificate.get()));
  }
  // The loop ends on the end of the text (PEM_R_NO_START_LINE) or on a block that does not parse.
  const unsigned long last = ERR_peek_last_error();
  const bool clean_end =
      last == 0 || (ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE);
  if (!clean_end) return invalid("a certificate of the bundle does not parse: " + openssl_error());
  ERR_clear_error();
  if (descriptions.empty()) return invalid("the bundle holds no PEM certificate");
  return descriptions;
}

kube::Result<CertificatePair> generate_self_signed_certificate(const std::vector<std::string>& names,
                                                               std::string_view organization) {
  CertificateSpec spec;
  spec.names = names;
  spec.organization = std::string(organization);
  return issue_certificate(spec);
}

}  // namespace myop::runtime
