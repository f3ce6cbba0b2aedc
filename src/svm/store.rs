// SPDX-License-Identifier: GPL-2.0

//! The kernel's range storage: a red-black tree keyed by a range's last
//! page, with a pool of node reservations so that range-set changes cannot
//! fail half-way (see `rust/kfd-logic/src/svm/mod.rs`, "Storage" and
//! "Failure atomicity").

use kernel::{
    prelude::*,
    rbtree::{RBTree, RBTreeNode, RBTreeNodeReservation},
};

use crate::kabi::log::kfd_err;

use super::logic::{
    ranges::{Range, Store},
    SvmError,
};

/// `RBTree` storage with reserved nodes.
pub(crate) struct RbStore<T> {
    tree: RBTree<u64, Range<T>>,
    /// Nodes allocated ahead by [`Store::reserve`].
    pool: KVec<RBTreeNodeReservation<u64, Range<T>>>,
    len: usize,
}

impl<T> RbStore<T> {
    /// An empty store.
    pub(crate) fn new() -> Self {
        RbStore { tree: RBTree::new(), pool: KVec::new(), len: 0 }
    }

    /// Frees reserved nodes that were not used (after an operation).
    pub(crate) fn trim(&mut self) {
        self.pool.clear();
        if self.pool.capacity() > 64 {
            self.pool = KVec::new();
        }
    }

    /// Reserved nodes not used yet.
    #[allow(dead_code)] // KUnit checks that the logic reserves exactly.
    pub(crate) fn spare(&self) -> usize {
        self.pool.len()
    }
}

impl<T> Store<T> for RbStore<T> {
    fn reserve(&mut self, n: usize) -> Result<(), SvmError> {
        if self.pool.len() >= n {
            return Ok(());
        }
        self.pool.reserve(n - self.pool.len(), GFP_KERNEL).map_err(|_| SvmError::NoMem)?;
        while self.pool.len() < n {
            let node = RBTreeNodeReservation::new(GFP_KERNEL).map_err(|_| SvmError::NoMem)?;
            // Capacity was reserved above: cannot fail.
            self.pool.push(node, GFP_KERNEL).map_err(|_| SvmError::NoMem)?;
        }
        Ok(())
    }

    fn insert_reserved(&mut self, range: Range<T>) {
        let key = range.last;
        let node = match self.pool.pop() {
            Some(r) => r.into_node(key, range),
            // Only reachable through a bug in the logic's node count: try to
            // allocate rather than lose the range.
            None => match RBTreeNode::new(key, range, GFP_KERNEL) {
                Ok(node) => {
                    kfd_err!("svm: range insert without a reserved node\n");
                    node
                }
                Err(_) => {
                    kfd_err!("svm: range [.., {:#x}] lost: no reserved node\n", key);
                    return;
                }
            },
        };
        match self.tree.insert(node) {
            None => self.len += 1,
            Some(_) => kfd_err!("svm: duplicate range key {:#x}\n", key),
        }
    }

    fn remove(&mut self, last: u64) -> Option<Range<T>> {
        let r = self.tree.remove(&last)?;
        self.len -= 1;
        Some(r)
    }

    fn lower_bound(&self, page: u64) -> Option<&Range<T>> {
        // The cursor's references only live as long as the cursor: look the
        // key up again (both O(log n)).
        let key = *self.tree.cursor_lower_bound(&page)?.current().0;
        self.tree.get(&key)
    }

    fn get_mut(&mut self, last: u64) -> Option<&mut Range<T>> {
        self.tree.get_mut(&last)
    }

    fn last_before(&self, page: u64) -> Option<&Range<T>> {
        // The node before the first key >= page, or the last node.
        let key = match self.tree.cursor_lower_bound(&page) {
            Some(c) => *c.peek_prev()?.0,
            None => *self.tree.cursor_back()?.current().0,
        };
        self.tree.get(&key)
    }

    fn pop_first(&mut self) -> Option<Range<T>> {
        let key = *self.tree.cursor_front()?.current().0;
        self.remove(key)
    }

    fn len(&self) -> usize {
        self.len
    }
}
