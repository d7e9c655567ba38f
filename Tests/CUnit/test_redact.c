// argv redaction: real-world forms of secrets on command lines, each with the argument before
// it (or none), and what must be logged. Plus what must stay as it is.
#include "cunit.h"
#include "wedjat_json.h"

typedef struct { const char *previous, *arg, *want; } form;

static const form secrets[] = {
    // option and value as two arguments, names that say "secret" in their own words
    {"--client-secret", "s3cr3t", "***"},
    {"--private-key", "MIIEvQIBADAN", "***"},
    {"--db-password", "hunter2", "***"},
    {"--access-token", "ghp_abcdef", "***"},
    {"--jwt", "eyJhbGciOi", "***"},
    {"--api-key", "k-123", "***"},
    {"--apikey", "k-123", "***"},
    {"--auth-token", "t", "***"},
    {"--oauth2-bearer", "t", "***"},
    {"--sas", "sv=2020&sig=x", "***"},
    {"--passphrase", "correct horse", "***"},
    {"--aws-secret-access-key", "wJalrXUt", "***"},
    {"--session", "abc", "***"},
    {"--cookie", "sid=1", "***"},
    {"-u", "alice:pw", "***"},
    {"-p", "hunter2", "***"},
    {"--user", "alice:pw", "***"},
    {"--proxy-user", "bob:pw", "***"},
    {"-b", "session=1", "***"},
    // option=value
    {0, "--client-secret=s3cr3t", "--client-secret=***"},
    {0, "--db-password=hunter2", "--db-password=***"},
    {0, "--user=alice:pw", "--user=***"},
    {0, "--token=abc", "--token=***"},
    // glued short options
    {0, "-uuser:pw", "-u***"},
    {0, "-phunter2", "-p***"},
    // environment-style assignments and properties
    {0, "MYSQL_PWD=hunter2", "MYSQL_PWD=***"},
    {0, "PGPASSWORD=hunter2", "PGPASSWORD=***"},
    {0, "AWS_SECRET_ACCESS_KEY=wJalrXUt", "AWS_SECRET_ACCESS_KEY=***"},
    {0, "GITHUB_TOKEN=ghp_x", "GITHUB_TOKEN=***"},
    {0, "-Djavax.net.ssl.keyStorePassword=changeit", "-Djavax.net.ssl.keyStorePassword=***"},
    {"--set", "auth.password=x", "auth.password=***"},
    {0, "spring.datasource.password=x", "spring.datasource.password=***"},
    // form data, query-like lists, JSON bodies
    {"-d", "user=alice&password=x&remember=1", "user=alice&password=***&remember=1"},
    {"--data", "{\"username\":\"a\",\"password\":\"x\"}", "{\"username\":\"a\",\"password\":\"***\"}"},
    {"-d", "{\"api_key\": \"k\", \"n\": 1}", "{\"api_key\": \"***\", \"n\": 1}"},
    // headers
    {"-H", "Authorization: Bearer abc", "Authorization: ***"},
    {"-H", "X-Api-Key: abc", "X-Api-Key: ***"},
    {0, "--header=Cookie: a=b", "--header=Cookie: ***"},
    {0, "-HAuthorization: Bearer abc", "-HAuthorization: ***"},
    {0, "X-Auth-Token: abc", "X-Auth-Token: ***"},
    {0, "Authorization: Basic YWxhZGRpbg==", "Authorization: ***"},
    // URLs and DSNs
    {0, "https://user:pw@example.com:8443/a/b?token=x&y=2#frag", "https://***@example.com:8443/a/b?***#***"},
    {0, "postgres://app:pw@db:5432/app", "postgres://***@db:5432/app"},
    {"--dsn", "mysql://root:pw@127.0.0.1/db", "***"},
    // a credential anywhere
    {0, "token Bearer abc", "token Bearer ***"},
};

static const form kept[] = {
    {0, "-v", "-v"},
    {0, "file.txt", "file.txt"},
    {0, "http://127.0.0.1:8080/", "http://127.0.0.1:8080/"},
    {"-H", "Content-Type: text/plain", "Content-Type: text/plain"},
    {0, "-HHost: example.org", "-HHost: example.org"},
    {0, "Note: hello", "Note: hello"},
    {"--author", "Alice <a@example.org>", "Alice <a@example.org>"},
    {"--keyboard", "us", "us"},
    {0, "--output=report.txt", "--output=report.txt"},
    {0, "LANG=C.UTF-8", "LANG=C.UTF-8"},
    // an option that looks secret followed by another option: that is no value
    {"--password-stdin", "-u", "-u"},
    {"--no-auth", "--verbose", "--verbose"},
};

static void check(const form *f) {
    char out[512];
    wj_redact_arg(f->previous, f->arg, out, sizeof out);
    CHECK(strcmp(out, f->want) == 0, "after %s: \"%s\" -> \"%s\", want \"%s\"", f->previous ? f->previous : "(none)",
          f->arg, out, f->want);
}

void test_redact(void) {
    size_t n = sizeof secrets / sizeof *secrets;
    CHECK(n >= 30, "the corpus has %zu secret forms", n);
    for (size_t i = 0; i < n; i++) check(&secrets[i]);
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) check(&kept[i]);
    // A tiny output buffer: cut, NUL-terminated, never overrun.
    char small[4];
    wj_redact_arg(0, "--password=hunter2", small, sizeof small);
    CHECK(strlen(small) == 3, "cut to the buffer: \"%s\"", small);
}
