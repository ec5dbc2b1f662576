/* utf8.c — turn arbitrary command output into text that is valid JSON. */
#include "internal.h"
#include "json_util.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is invalid
 * or cut short.  Rejects overlongs, surrogates and values above U+10FFFF. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail) {
  unsigned char c = s[0];
  size_t n;
  unsigned min;
  unsigned cp;
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, min = 0x80, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, min = 0x800, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, min = 0x10000, cp = c & 0x07;
  else
    return 0;
  if (avail < n)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

/* What a person is shown of s at i, into out (at most 4 bytes): a valid
 * printable character as it is, anything else (a control, a C1 control,
 * a byte that is not UTF-8, a backslash) as \xNN.  The bytes consumed. */
static size_t shown_at(const unsigned char *p, size_t len, size_t i, char *out, size_t *outn) {
  size_t n = utf8_seq_len(p + i, len - i);
  bool c1 = n == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0; /* U+0080..U+009F */
  /* Marks that break a line or turn the text's direction: U+200E-200F,
   * U+2028-202E, U+2066-2069. */
  bool mark = n == 3 && p[i] == 0xE2 &&
              ((p[i + 1] == 0x80 && ((p[i + 2] >= 0x8E && p[i + 2] <= 0x8F) ||
                                     (p[i + 2] >= 0xA8 && p[i + 2] <= 0xAE))) ||
               (p[i + 1] == 0x81 && p[i + 2] >= 0xA6 && p[i + 2] <= 0xA9));
  if (n == 0 || c1 || mark || p[i] < 0x20 || p[i] == 0x7F || p[i] == '\\') {
    snprintf(out, 5, "\\x%02x", p[i]);
    *outn = 4;
    return 1;
  }
  memcpy(out, p + i, n);
  *outn = n;
  return n;
}

void fputs_for_terminal(const char *s, FILE *f) {
  const unsigned char *p = (const unsigned char *)s;
  size_t len = strlen(s);
  char buf[5];
  for (size_t i = 0, n; i < len;) {
    i += shown_at(p, len, i, buf, &n);
    fwrite(buf, 1, n, f);
  }
}

bool text_for_terminal(const char *s, char *out, size_t size) {
  const unsigned char *p = (const unsigned char *)s;
  size_t len = strlen(s), at = 0;
  bool same = true;
  char buf[5];
  for (size_t i = 0, n; i < len;) {
    size_t used = shown_at(p, len, i, buf, &n);
    same = same && used == n;
    i += used;
    if (at + n >= size)
      break;
    memcpy(out + at, buf, n);
    at += n;
  }
  if (size)
    out[at] = '\0';
  return same;
}

char *utf8_sanitize(const char *data, size_t len, size_t *out_len, bool *valid) {
  /* Each invalid byte becomes three bytes (EF BF BD) at most. */
  char *out = malloc(len * 3 + 1);
  size_t o = 0;
  bool ok = true;
  if (!out)
    return NULL;
  for (size_t i = 0; i < len;) {
    size_t n = utf8_seq_len((const unsigned char *)data + i, len - i);
    if (n == 0) {
      out[o++] = (char)0xEF, out[o++] = (char)0xBF, out[o++] = (char)0xBD;
      ok = false;
      i++;
      continue;
    }
    memcpy(out + o, data + i, n);
    o += n;
    i += n;
  }
  out[o] = '\0';
  if (out_len)
    *out_len = o;
  if (valid)
    *valid = ok;
  return out;
}

size_t utf8_prefix_len(const char *data, size_t len) {
  /* Step back over at most three continuation bytes to the last lead byte;
   * keep it only when its whole sequence fits. */
  size_t i = len, back = 0;
  while (i > 0 && back < 3 && ((unsigned char)data[i - 1] & 0xC0) == 0x80)
    i--, back++;
  if (i == 0)
    return len;
  unsigned char lead = (unsigned char)data[i - 1];
  if (lead < 0xC0)
    return len; /* ASCII or a stray continuation byte: nothing is split */
  size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  return back + 1 >= need ? len : i - 1;
}

char *base64_encode(const void *data, size_t len) {
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const unsigned char *s = data;
  char *out = malloc((len + 2) / 3 * 4 + 1);
  size_t o = 0, i = 0;
  if (!out)
    return NULL;
  for (; i + 2 < len; i += 3) {
    unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
    out[o++] = tbl[v >> 18], out[o++] = tbl[(v >> 12) & 63];
    out[o++] = tbl[(v >> 6) & 63], out[o++] = tbl[v & 63];
  }
  if (i < len) {
    unsigned v = (unsigned)s[i] << 16 | (i + 1 < len ? (unsigned)s[i + 1] << 8 : 0);
    out[o++] = tbl[v >> 18], out[o++] = tbl[(v >> 12) & 63];
    out[o++] = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
    out[o++] = '=';
  }
  out[o] = '\0';
  return out;
}
