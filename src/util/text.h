/*
 * text.h - untrusted text (label values from scrapes, ledger fields, names
 * typed by users) written into an output so that it stays text: it cannot
 * forge a line of a log, send a terminal escape, run as script in a page,
 * become a formula in a spreadsheet, or make a JSON document unwritable.
 *
 * One rule for what is escaped as "\xNN" (the form ts_error_format uses):
 * every byte that does not start a valid UTF-8 sequence (a stray or cut
 * sequence, an overlong form, a surrogate, beyond U+10FFFF), and, where the
 * output is lines of text, every C0 control byte, DEL, and the C1 controls
 * U+0080..U+009F. Everything else is copied as it is.
 */
#ifndef TS_TEXT_H
#define TS_TEXT_H

#include <jansson.h>
#include <stddef.h>
#include "util/sbuf.h"

/* The length of the valid UTF-8 sequence s starts with (1..4), 0 when it
 * starts none (or at the NUL). */
size_t ts_utf8_seq(const char *s);

/* 1 when s is valid UTF-8 throughout. */
int ts_utf8_valid(const char *s);

/* s for a terminal or a log line: invalid bytes and control characters as
 * \xNN. */
void ts_text_plain(struct ts_sbuf *b, const char *s);

/* ts_text_plain, then spaces up to width bytes (a table column). */
void ts_text_pad(struct ts_sbuf *b, const char *s, size_t width);

/* s as HTML text or a quoted attribute value: & < > " ' as character
 * references, invalid bytes and control characters as \xNN. */
void ts_text_html(struct ts_sbuf *b, const char *s);

/* s as one CSV field (RFC 4180): quoted when it holds a comma, a quote, CR
 * or LF, quotes doubled; a field that a spreadsheet would take for a
 * formula (first character =, +, -, @, tab or CR) is quoted and prefixed
 * with an apostrophe; invalid bytes and control characters as \xNN, so
 * one row is one line. */
void ts_text_csv(struct ts_sbuf *b, const char *s);

/* A JSON string of s, invalid bytes as \xNN (control characters are JSON's
 * own escapes); NULL only when out of memory. */
json_t *ts_text_json(const char *s);

#endif
