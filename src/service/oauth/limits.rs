//! The limit on failed sign-ins, per account and per client address, kept in this
//! process only (several processes each keep their own count). An attempt is counted
//! before its credentials are checked, in the same step that checks the limit, so
//! attempts racing each other cannot pass it together; a success takes its attempt back
//! and clears the account's count. A count lasts `window` from its first attempt.

use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

use quick_cache::sync::Cache;

/// Accounts and addresses remembered at once; past that the least used are forgotten.
const CAPACITY: usize = 100_000;

#[derive(Debug, Clone, Copy)]
pub struct LimitSettings {
    pub per_account: u32,
    pub per_address: u32,
    pub window_ms: i64,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            per_account: 5,
            per_address: 20,
            window_ms: 15 * 60 * 1000,
        }
    }
}

/// (attempts, window start).
type Count = (u32, i64);

pub struct SignInLimits {
    settings: LimitSettings,
    accounts: Cache<String, Count>,
    addresses: Cache<IpAddr, Count>,
    /// Check-and-count is one step.
    lock: Mutex<()>,
}

/// Where an attempt was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Account,
    Address,
}

fn current(count: Option<Count>, now_ms: i64, window_ms: i64) -> Count {
    match count {
        Some((n, start)) if now_ms.saturating_sub(start) < window_ms => (n, start),
        _ => (0, now_ms),
    }
}

impl SignInLimits {
    pub fn new(settings: LimitSettings) -> SignInLimits {
        SignInLimits {
            settings,
            accounts: Cache::new(CAPACITY),
            addresses: Cache::new(CAPACITY),
            lock: Mutex::new(()),
        }
    }

    /// Counts an attempt on `account` from `address`, unless either has reached its
    /// limit of failures within the window.
    pub fn attempt(&self, account: &str, address: IpAddr, now_ms: i64) -> Result<(), Refused> {
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let window = self.settings.window_ms;
        let by_account = current(self.accounts.get(account), now_ms, window);
        let by_address = current(self.addresses.get(&address), now_ms, window);
        if by_account.0 >= self.settings.per_account {
            return Err(Refused::Account);
        }
        if by_address.0 >= self.settings.per_address {
            return Err(Refused::Address);
        }
        self.accounts
            .insert(account.to_owned(), (by_account.0 + 1, by_account.1));
        self.addresses
            .insert(address, (by_address.0 + 1, by_address.1));
        Ok(())
    }

    /// The attempt succeeded: the account's count is cleared, the address's attempt
    /// taken back (its other failures stand).
    pub fn succeeded(&self, account: &str, address: IpAddr) {
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.accounts.remove(account);
        if let Some((n, start)) = self.addresses.get(&address) {
            self.addresses.insert(address, (n.saturating_sub(1), start));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_past_the_limit_are_refused_until_the_window_ends() {
        let limits = SignInLimits::new(LimitSettings {
            per_account: 2,
            per_address: 3,
            window_ms: 1000,
        });
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        assert!(limits.attempt("ann", ip, 0).is_ok());
        assert!(limits.attempt("ann", ip, 1).is_ok());
        assert_eq!(limits.attempt("ann", ip, 2), Err(Refused::Account));
        assert!(limits.attempt("bo", ip, 3).is_ok());
        assert_eq!(limits.attempt("cy", ip, 4), Err(Refused::Address));
        assert!(
            limits
                .attempt("ann", "10.0.0.2".parse().unwrap(), 1000)
                .is_ok()
        );
        limits.succeeded("ann", "10.0.0.2".parse().unwrap());
        assert!(limits.attempt("ann", ip, 1001).is_ok());
    }
}
