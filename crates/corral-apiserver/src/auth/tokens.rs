//! The static token file of kube-apiserver's `--token-auth-file`: CSV lines
//! `token,user,uid[,"group1,group2"]`; a line with fewer than three columns is an error that
//! names it, one with an empty token is skipped, and the last line of a repeated token wins
//! (kube-apiserver warns of both).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::UserInfo;

#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    // The I/O error is in the message, not a source, so that a chain prints it once.
    #[error("cannot read the token file {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error(
        "token file {path} must have at least 3 columns (token, user name, user uid), found {found} on line {line}"
    )]
    Columns {
        path: String,
        line: usize,
        found: usize,
    },
    #[error("token file {path}: unterminated quote on line {line}")]
    Quote { path: String, line: usize },
}

/// The users of a token file, by token.
#[derive(Default)]
pub struct TokenFile {
    users: HashMap<String, Arc<UserInfo>>,
}

impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the tokens.
        f.debug_struct("TokenFile")
            .field("tokens", &self.users.len())
            .finish()
    }
}

impl TokenFile {
    pub fn read(path: &Path) -> Result<TokenFile, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|error| TokenFileError::Read {
            path: path.display().to_string(),
            error,
        })?;
        TokenFile::parse(&text, &path.display().to_string())
    }

    /// Parses the file's text; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<TokenFile, TokenFileError> {
        let mut users = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let line_number = index + 1;
            if line.trim().is_empty() {
                continue;
            }
            let record = split_csv(line).ok_or_else(|| TokenFileError::Quote {
                path: path.into(),
                line: line_number,
            })?;
            if record.len() < 3 {
                return Err(TokenFileError::Columns {
                    path: path.into(),
                    line: line_number,
                    found: record.len(),
                });
            }
            let token = &record[0];
            if token.is_empty() {
                tracing::warn!(
                    path,
                    line = line_number,
                    "Empty token in the token file skipped"
                );
                continue;
            }
            let groups = match record.get(3) {
                Some(groups) if !groups.is_empty() => {
                    groups.split(',').map(|g| g.trim().to_string()).collect()
                }
                _ => Vec::new(),
            };
            let user = UserInfo::authenticated(record[1].clone(), record[2].clone(), groups);
            if users.insert(token.clone(), Arc::new(user)).is_some() {
                tracing::warn!(
                    path,
                    line = line_number,
                    "Duplicate token in the token file; the last one wins"
                );
            }
        }
        Ok(TokenFile { users })
    }

    /// The user of `token`.
    pub fn user(&self, token: &str) -> Option<Arc<UserInfo>> {
        self.users.get(token).cloned()
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

/// The fields of one CSV line (RFC 4180 quoting, leading spaces of a field trimmed as Go's
/// `TrimLeadingSpace`); `None` for an unterminated quote.
fn split_csv(line: &str) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') || chars.peek() == Some(&'\t') {
            chars.next();
        }
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return None,
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                }
            }
            // Anything between the closing quote and the comma is kept, as lenient readers do.
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                field.push(c);
                chars.next();
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                field.push(c);
                chars.next();
            }
        }
        fields.push(field.trim_end_matches('\r').to_string());
        match chars.next() {
            Some(',') => continue,
            _ => return Some(fields),
        }
    }
}
