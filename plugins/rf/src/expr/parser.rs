//! A recursive-descent parser for the Python expression subset, following Python's
//! precedence: conditional, `or`, `and`, `not`, comparisons, `|`, `^`, `&`, shifts,
//! `+ -`, `* / // %`, unary, `**`, then calls, subscripts and attributes.

use super::EvalError;
use super::lexer::Tok;
use crate::value::Value;

/// An expression.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    /// A literal value.
    Const(Value),
    /// A bare name: a builtin, a comprehension variable, or the base of extended
    /// variable syntax.
    Name(String),
    /// `$name`.
    Var(String),
    /// `[a, b]`.
    List(Vec<Expr>),
    /// `(a, b)`.
    Tuple(Vec<Expr>),
    /// `{k: v}`.
    Dict(Vec<(Expr, Expr)>),
    /// `-x`, `+x`, `~x`.
    Unary(&'static str, Box<Expr>),
    /// `not x`.
    Not(Box<Expr>),
    /// `a + b` and the other binary operators.
    Bin(&'static str, Box<Expr>, Box<Expr>),
    /// `a and b and c`.
    And(Vec<Expr>),
    /// `a or b or c`.
    Or(Vec<Expr>),
    /// `a < b <= c`: the first operand and the (operator, operand) chain.
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    /// `a if cond else b`.
    IfElse(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `x.name`.
    Attr(Box<Expr>, String),
    /// `f(args, name=value)`.
    Call(Box<Expr>, Vec<Expr>, Vec<(String, Expr)>),
    /// `x[i]`.
    Index(Box<Expr>, Box<Expr>),
    /// `x[a:b:c]`.
    Slice(Box<Expr>, [Option<Box<Expr>>; 3]),
    /// `*iterable` in a call's arguments.
    Star(Box<Expr>),
    /// `[elt for targets in iter if cond ...]` (also generator arguments, as lists).
    ListComp(Box<Expr>, Box<Comp>),
    /// `{k: v for targets in iter if cond}`.
    DictComp(Box<(Expr, Expr)>, Box<Comp>),
}

/// The `for ... in ... if ...` part of a comprehension (one `for` clause).
#[derive(Debug, Clone)]
pub(crate) struct Comp {
    /// Loop variable names; more than one unpacks each item.
    pub(crate) targets: Vec<String>,
    /// What is iterated.
    pub(crate) iter: Expr,
    /// `if` filters.
    pub(crate) conds: Vec<Expr>,
}

/// A call's positional and keyword arguments (`**mapping` is kept under the name `**`).
type CallArgs = (Vec<Expr>, Vec<(String, Expr)>);

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    Is,
    IsNot,
}

impl CmpOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
        }
    }
}

/// Nesting limit: expressions come from test data, and a deep one must not exhaust the
/// guest's stack.
const MAX_DEPTH: usize = 100;

pub(crate) struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
}

/// Parses a whole expression.
pub(crate) fn parse(toks: Vec<Tok>) -> Result<Expr, EvalError> {
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
    };
    let expr = p.expr_list()?;
    if p.peek() != &Tok::End {
        return Err(EvalError::syntax("invalid syntax"));
    }
    Ok(expr)
}

fn syntax() -> EvalError {
    EvalError::syntax("invalid syntax")
}

impl Parser {
    fn peek(&self) -> &Tok {
        self.toks.get(self.pos).unwrap_or(&Tok::End)
    }

    fn next(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Name(n) if n == kw)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if self.is_op(op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_op(&mut self, op: &str) -> Result<(), EvalError> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(syntax())
        }
    }

    fn enter(&mut self) -> Result<(), EvalError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(EvalError::py(
                "RecursionError",
                "maximum recursion depth exceeded during compilation",
            ));
        }
        Ok(())
    }

    /// `a, b` at the top level is a tuple, as in Python.
    fn expr_list(&mut self) -> Result<Expr, EvalError> {
        let first = self.expr()?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.at_expr_end() {
                break;
            }
            items.push(self.expr()?);
        }
        Ok(Expr::Tuple(items))
    }

    fn at_expr_end(&self) -> bool {
        matches!(
            self.peek(),
            Tok::End | Tok::Op(")") | Tok::Op("]") | Tok::Op("}")
        )
    }

    /// A conditional expression.
    fn expr(&mut self) -> Result<Expr, EvalError> {
        self.enter()?;
        let result = self.conditional();
        self.depth -= 1;
        result
    }

    fn conditional(&mut self) -> Result<Expr, EvalError> {
        if self.is_kw("lambda") {
            return Err(EvalError::syntax(
                "lambda is not supported in this evaluator",
            ));
        }
        let body = self.or_test()?;
        if self.eat_kw("if") {
            let cond = self.or_test()?;
            if !self.eat_kw("else") {
                return Err(EvalError::syntax("expected 'else' after 'if' expression"));
            }
            let other = self.expr()?;
            return Ok(Expr::IfElse(
                Box::new(cond),
                Box::new(body),
                Box::new(other),
            ));
        }
        Ok(body)
    }

    fn or_test(&mut self) -> Result<Expr, EvalError> {
        let first = self.and_test()?;
        if !self.is_kw("or") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_kw("or") {
            items.push(self.and_test()?);
        }
        Ok(Expr::Or(items))
    }

    fn and_test(&mut self) -> Result<Expr, EvalError> {
        let first = self.not_test()?;
        if !self.is_kw("and") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_kw("and") {
            items.push(self.not_test()?);
        }
        Ok(Expr::And(items))
    }

    fn not_test(&mut self) -> Result<Expr, EvalError> {
        if self.eat_kw("not") {
            self.enter()?;
            let inner = self.not_test();
            self.depth -= 1;
            return Ok(Expr::Not(Box::new(inner?)));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, EvalError> {
        let first = self.bitor()?;
        let mut chain = Vec::new();
        loop {
            let op = match self.peek() {
                Tok::Op("==") => CmpOp::Eq,
                Tok::Op("!=") => CmpOp::Ne,
                Tok::Op("<") => CmpOp::Lt,
                Tok::Op("<=") => CmpOp::Le,
                Tok::Op(">") => CmpOp::Gt,
                Tok::Op(">=") => CmpOp::Ge,
                Tok::Name(n) if n == "in" => CmpOp::In,
                Tok::Name(n) if n == "is" => {
                    self.pos += 1;
                    let op = if self.eat_kw("not") {
                        CmpOp::IsNot
                    } else {
                        CmpOp::Is
                    };
                    chain.push((op, self.bitor()?));
                    continue;
                }
                Tok::Name(n) if n == "not" => {
                    // `not in`; a bare `not` here is a syntax error.
                    if matches!(self.toks.get(self.pos + 1), Some(Tok::Name(n)) if n == "in") {
                        self.pos += 2;
                        chain.push((CmpOp::NotIn, self.bitor()?));
                        continue;
                    }
                    return Err(syntax());
                }
                _ => break,
            };
            self.pos += 1;
            chain.push((op, self.bitor()?));
        }
        if chain.is_empty() {
            Ok(first)
        } else {
            Ok(Expr::Compare(Box::new(first), chain))
        }
    }

    fn binary_level(
        &mut self,
        ops: &[&'static str],
        next: fn(&mut Self) -> Result<Expr, EvalError>,
    ) -> Result<Expr, EvalError> {
        let mut left = next(self)?;
        loop {
            let Some(op) = ops.iter().find(|op| self.is_op(op)) else {
                return Ok(left);
            };
            self.pos += 1;
            let right = next(self)?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
    }

    fn bitor(&mut self) -> Result<Expr, EvalError> {
        self.binary_level(&["|"], Self::bitxor)
    }

    fn bitxor(&mut self) -> Result<Expr, EvalError> {
        self.binary_level(&["^"], Self::bitand)
    }

    fn bitand(&mut self) -> Result<Expr, EvalError> {
        self.binary_level(&["&"], Self::shift)
    }

    fn shift(&mut self) -> Result<Expr, EvalError> {
        self.binary_level(&["<<", ">>"], Self::arith)
    }

    fn arith(&mut self) -> Result<Expr, EvalError> {
        self.binary_level(&["+", "-"], Self::term)
    }

    fn term(&mut self) -> Result<Expr, EvalError> {
        self.binary_level(&["*", "/", "//", "%"], Self::factor)
    }

    fn factor(&mut self) -> Result<Expr, EvalError> {
        for op in ["-", "+", "~"] {
            if self.eat_op(op) {
                self.enter()?;
                let inner = self.factor();
                self.depth -= 1;
                return Ok(Expr::Unary(op, Box::new(inner?)));
            }
        }
        self.power()
    }

    fn power(&mut self) -> Result<Expr, EvalError> {
        let base = self.primary()?;
        if self.eat_op("**") {
            // Right-associative, and binds tighter than a unary minus on its left only.
            self.enter()?;
            let exp = self.factor();
            self.depth -= 1;
            return Ok(Expr::Bin("**", Box::new(base), Box::new(exp?)));
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Expr, EvalError> {
        let mut expr = self.atom()?;
        loop {
            if self.eat_op(".") {
                match self.next() {
                    Tok::Name(n) => expr = Expr::Attr(Box::new(expr), n),
                    _ => return Err(syntax()),
                }
            } else if self.eat_op("(") {
                let (args, kwargs) = self.call_args()?;
                expr = Expr::Call(Box::new(expr), args, kwargs);
            } else if self.eat_op("[") {
                expr = self.subscript(expr)?;
            } else {
                return Ok(expr);
            }
        }
    }

    fn call_args(&mut self) -> Result<CallArgs, EvalError> {
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        while !self.eat_op(")") {
            if self.eat_op("**") {
                // `**mapping`: kept under the name "**" and expanded when called.
                kwargs.push(("**".to_string(), self.expr()?));
            } else if self.eat_op("*") {
                if !kwargs.is_empty() {
                    return Err(EvalError::syntax(
                        "iterable argument unpacking follows keyword argument unpacking",
                    ));
                }
                args.push(Expr::Star(Box::new(self.expr()?)));
            } else if let (Tok::Name(n), Some(Tok::Op("="))) =
                (self.peek().clone(), self.toks.get(self.pos + 1))
            {
                self.pos += 2;
                kwargs.push((n, self.expr()?));
            } else {
                if !kwargs.is_empty() {
                    return Err(EvalError::syntax(
                        "positional argument follows keyword argument",
                    ));
                }
                let arg = self.expr()?;
                if self.is_kw("for") {
                    // A generator argument: `sum(x for x in $list)`.
                    let comp = self.comp()?;
                    args.push(Expr::ListComp(Box::new(arg), Box::new(comp)));
                } else {
                    args.push(arg);
                }
            }
            if !self.eat_op(",") {
                self.expect_op(")")?;
                break;
            }
        }
        Ok((args, kwargs))
    }

    fn subscript(&mut self, target: Expr) -> Result<Expr, EvalError> {
        let mut parts: [Option<Box<Expr>>; 3] = [None, None, None];
        let mut colons = 0;
        loop {
            if self.eat_op("]") {
                break;
            }
            if self.eat_op(":") {
                colons += 1;
                if colons > 2 {
                    return Err(syntax());
                }
                continue;
            }
            if parts[colons].is_some() {
                return Err(syntax());
            }
            parts[colons] = Some(Box::new(self.expr_list()?));
        }
        if colons == 0 {
            let [index, _, _] = parts;
            let index = index.ok_or_else(syntax)?;
            return Ok(Expr::Index(Box::new(target), index));
        }
        Ok(Expr::Slice(Box::new(target), parts))
    }

    fn comp(&mut self) -> Result<Comp, EvalError> {
        if !self.eat_kw("for") {
            return Err(syntax());
        }
        let mut targets = Vec::new();
        let paren = self.eat_op("(");
        loop {
            match self.next() {
                Tok::Name(n) => targets.push(n),
                _ => return Err(syntax()),
            }
            if !self.eat_op(",") {
                break;
            }
        }
        if paren {
            self.expect_op(")")?;
        }
        if !self.eat_kw("in") {
            return Err(syntax());
        }
        let iter = self.or_test()?;
        let mut conds = Vec::new();
        while self.eat_kw("if") {
            conds.push(self.or_test()?);
        }
        if self.is_kw("for") {
            return Err(EvalError::syntax(
                "nested comprehensions are not supported in this evaluator",
            ));
        }
        Ok(Comp {
            targets,
            iter,
            conds,
        })
    }

    fn atom(&mut self) -> Result<Expr, EvalError> {
        match self.next() {
            Tok::Int(i) => Ok(Expr::Const(Value::Int(i))),
            Tok::Float(f) => Ok(Expr::Const(Value::Float(f))),
            Tok::Str(s) => {
                let mut s = s;
                // Adjacent literals concatenate: 'a' 'b' is 'ab'.
                while let Tok::Str(more) = self.peek() {
                    s.push_str(more);
                    self.pos += 1;
                }
                Ok(Expr::Const(Value::Str(s)))
            }
            Tok::Bytes(b) => {
                let mut b = b;
                while let Tok::Bytes(more) = self.peek() {
                    b.extend_from_slice(more);
                    self.pos += 1;
                }
                Ok(Expr::Const(Value::Bytes(b)))
            }
            Tok::Var(v) => Ok(Expr::Var(v)),
            Tok::Name(n) => match n.as_str() {
                "True" => Ok(Expr::Const(Value::Bool(true))),
                "False" => Ok(Expr::Const(Value::Bool(false))),
                "None" => Ok(Expr::Const(Value::None)),
                "and" | "or" | "not" | "in" | "is" | "if" | "else" | "for" | "lambda"
                | "import" | "def" | "class" | "return" | "yield" | "await" | "del" | "pass"
                | "while" | "with" | "try" | "except" | "raise" | "from" | "global"
                | "nonlocal" | "assert" | "break" | "continue" | "elif" | "finally" | "as" => {
                    Err(syntax())
                }
                _ => Ok(Expr::Name(n)),
            },
            Tok::Op("(") => {
                if self.eat_op(")") {
                    return Ok(Expr::Tuple(Vec::new()));
                }
                let first = self.expr()?;
                if self.is_kw("for") {
                    let comp = self.comp()?;
                    self.expect_op(")")?;
                    return Ok(Expr::ListComp(Box::new(first), Box::new(comp)));
                }
                if self.eat_op(")") {
                    return Ok(first);
                }
                let mut items = vec![first];
                while self.eat_op(",") {
                    if self.is_op(")") {
                        break;
                    }
                    items.push(self.expr()?);
                }
                self.expect_op(")")?;
                Ok(Expr::Tuple(items))
            }
            Tok::Op("[") => {
                if self.eat_op("]") {
                    return Ok(Expr::List(Vec::new()));
                }
                let first = self.expr()?;
                if self.is_kw("for") {
                    let comp = self.comp()?;
                    self.expect_op("]")?;
                    return Ok(Expr::ListComp(Box::new(first), Box::new(comp)));
                }
                let mut items = vec![first];
                while self.eat_op(",") {
                    if self.is_op("]") {
                        break;
                    }
                    items.push(self.expr()?);
                }
                self.expect_op("]")?;
                Ok(Expr::List(items))
            }
            Tok::Op("{") => {
                if self.eat_op("}") {
                    return Ok(Expr::Dict(Vec::new()));
                }
                let key = self.expr()?;
                if !self.eat_op(":") {
                    return Err(EvalError::syntax(
                        "sets are not supported in this evaluator",
                    ));
                }
                let value = self.expr()?;
                if self.is_kw("for") {
                    let comp = self.comp()?;
                    self.expect_op("}")?;
                    return Ok(Expr::DictComp(Box::new((key, value)), Box::new(comp)));
                }
                let mut items = vec![(key, value)];
                while self.eat_op(",") {
                    if self.is_op("}") {
                        break;
                    }
                    let k = self.expr()?;
                    self.expect_op(":")?;
                    items.push((k, self.expr()?));
                }
                self.expect_op("}")?;
                Ok(Expr::Dict(items))
            }
            _ => Err(syntax()),
        }
    }
}
