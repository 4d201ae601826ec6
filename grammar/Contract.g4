// The MegaScale-Omni contract language. This file is the single source of truth for the syntax;
// the C++ lexer and parser are generated from it at build time (Debian antlr4 4.7.2).
//
//   import "profiles/mlvm.msc";
//   profile mlvm_heavy extends mlvm_base { cpu_cores = 4; gpu_sm_slices = 3; }
//   contract train uses profile mlvm_heavy {
//     io_topology { image_loader { cpu_cores = [2, 3, 4..7]; numa_node = 1; } }
//   }
grammar Contract;

file        : importDecl* declaration* EOF ;
importDecl  : IMPORT STRING SEMI ;
declaration : profileDecl | contractDecl ;
profileDecl : PROFILE name=ident (EXTENDS base=ident)? block ;
contractDecl: CONTRACT name=ident (USES PROFILE profile=ident)? block ;

block       : LBRACE member* RBRACE ;
member      : assignment | section ;
assignment  : ident ASSIGN value SEMI ;
section     : ident block ;

value       : range
            | quantity
            | STRING
            | (TRUE | FALSE)
            | PCI_ADDR
            | list
            | call
            | ident
            ;
quantity    : NUMBER unit? ;
unit        : IDENT | PERCENT ;
// 4..7 (CPUs), 37min..42min (a window of wall time): each end may carry its unit.
range       : NUMBER low=unit? DOTDOT NUMBER high=unit? ;
list        : LBRACKET (value (COMMA value)* COMMA?)? RBRACKET ;
call        : ident LPAREN (argument (COMMA argument)*)? RPAREN ;
argument    : (ident ASSIGN)? value ;

// Keywords are reserved only where they are keywords: they still name fields and roles.
ident       : IDENT | IMPORT | PROFILE | CONTRACT | EXTENDS | USES ;

IMPORT    : 'import' ;
PROFILE   : 'profile' ;
CONTRACT  : 'contract' ;
EXTENDS   : 'extends' ;
USES      : 'uses' ;
TRUE      : 'true' ;
FALSE     : 'false' ;

LBRACE    : '{' ;
RBRACE    : '}' ;
LBRACKET  : '[' ;
RBRACKET  : ']' ;
LPAREN    : '(' ;
RPAREN    : ')' ;
SEMI      : ';' ;
COMMA     : ',' ;
ASSIGN    : '=' ;
COLON     : ':' ;
DOTDOT    : '..' ;
PERCENT   : '%' ;

// A PCI address: 0000:81:00.0, 81:00.0, or a domain and bus 0000:81. Checked by the frontend.
PCI_ADDR  : HEX+ ':' HEX+ (':' HEX+)? ('.' HEX+)? ;
NUMBER    : '-'? DIGIT+ ('.' DIGIT+)? ;
IDENT     : [a-zA-Z_] [a-zA-Z0-9_\-]* ;
STRING    : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"' ;
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* ;

LINE_COMMENT  : ('//' | '#') ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
WS            : [ \t\r\n]+ -> skip ;
ERROR_CHAR    : . ;

fragment DIGIT : [0-9] ;
fragment HEX   : [0-9a-fA-F] ;
