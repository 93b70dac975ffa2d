/*
 * lex.h - CEL tokens (internal to the parser).  The token set follows
 * cel-go's CEL.g4 grammar; reserved words are lexed as identifiers and
 * refused by the parser where an identifier may not be one.
 */
#ifndef CEL_LEX_H
#define CEL_LEX_H

#include "cel_int.h"

typedef enum cel_tok {
    TOK_EOF = 0,
    TOK_ERROR,
    TOK_IDENT,
    TOK_ESC_IDENT, /* `a.b-c` after a dot */
    TOK_INT,
    TOK_UINT,
    TOK_DOUBLE,
    TOK_STRING,
    TOK_BYTES,
    TOK_TRUE,
    TOK_FALSE,
    TOK_NULL,
    TOK_IN,
    TOK_LPAREN, TOK_RPAREN, TOK_LBRACKET, TOK_RBRACKET, TOK_LBRACE, TOK_RBRACE,
    TOK_DOT, TOK_COMMA, TOK_COLON, TOK_QUESTION,
    TOK_PLUS, TOK_MINUS, TOK_STAR, TOK_SLASH, TOK_PERCENT, TOK_NOT,
    TOK_EQ, TOK_NE, TOK_LT, TOK_LE, TOK_GT, TOK_GE, TOK_AND, TOK_OR,
} cel_tok;

typedef struct cel_token {
    cel_tok t;
    uint32_t pos; /* byte offset */
    uint32_t len; /* byte length of the token text */
    const char *why; /* TOK_ERROR: description */
} cel_token;

typedef struct cel_lexer {
    const char *s;
    size_t n;
    size_t i;
} cel_lexer;

void cel_lex_init(cel_lexer *lx, const char *s, size_t n);
cel_token cel_lex_next(cel_lexer *lx);

#endif
