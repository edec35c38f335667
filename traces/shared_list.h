// SharedList<T>: a vector whose copies share one storage until one of them is written
// (copy-on-write), so a trace drawn with replacement (trace.draw: millions of copies of a few
// thousand sessions) holds each pool session's segments once.
//
// Contract:
// - Reads have std::vector's API and meaning (size, empty, [], at, front, back, begin/end,
//   == with a SharedList or a std::vector, view() as a const std::vector&); a copy is O(1)
//   (it shares the storage) and equal to its source.
// - A non-const access (the mutable [], front, back, begin/end, push_back, resize, erase,
//   clear, ...) first gives this list a storage of its own when it shares one, then acts as
//   std::vector's: a write never shows through another list. So call reads on a const list
//   (std::as_const) where the list may be shared, or they copy the storage needlessly.
// - shares_with(o): whether the two lists read the same storage (tests, memory checks).
// - Not synchronised: lists that share a storage may be read from several threads, but one
//   that is being written must not be copied or written from another thread meanwhile.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace isim::trace {

template <class T>
class SharedList {
 public:
  using value_type = T;
  using size_type = size_t;
  using iterator = typename std::vector<T>::iterator;
  using const_iterator = typename std::vector<T>::const_iterator;

  SharedList() = default;
  SharedList(std::vector<T> v)  // NOLINT(google-explicit-constructor): a vector converts
      : p_(v.empty() ? nullptr : std::make_shared<std::vector<T>>(std::move(v))) {}
  SharedList(std::initializer_list<T> l) : SharedList(std::vector<T>(l)) {}

  // Reads.
  const std::vector<T>& view() const { return p_ ? *p_ : empty_vector(); }
  size_t size() const { return p_ ? p_->size() : 0; }
  bool empty() const { return size() == 0; }
  const T& operator[](size_t i) const { return (*p_)[i]; }
  const T& at(size_t i) const { return view().at(i); }
  const T& front() const { return p_->front(); }
  const T& back() const { return p_->back(); }
  const_iterator begin() const { return view().begin(); }
  const_iterator end() const { return view().end(); }
  const_iterator cbegin() const { return begin(); }
  const_iterator cend() const { return end(); }
  bool shares_with(const SharedList& o) const { return p_ != nullptr && p_ == o.p_; }

  friend bool operator==(const SharedList& a, const SharedList& b) {
    return a.p_ == b.p_ || a.view() == b.view();
  }
  friend bool operator==(const SharedList& a, const std::vector<T>& b) { return a.view() == b; }

  // Writes: this list's own storage first (copy-on-write).
  std::vector<T>& mut() {
    if (!p_)
      p_ = std::make_shared<std::vector<T>>();
    else if (p_.use_count() > 1)
      p_ = std::make_shared<std::vector<T>>(*p_);
    return *p_;
  }
  T& operator[](size_t i) { return mut()[i]; }
  T& at(size_t i) { return mut().at(i); }
  T& front() { return mut().front(); }
  T& back() { return mut().back(); }
  iterator begin() { return mut().begin(); }
  iterator end() { return mut().end(); }
  void push_back(const T& v) { mut().push_back(v); }
  void push_back(T&& v) { mut().push_back(std::move(v)); }
  template <class... A>
  T& emplace_back(A&&... a) {
    return mut().emplace_back(std::forward<A>(a)...);
  }
  void reserve(size_t n) { mut().reserve(n); }
  void resize(size_t n) { mut().resize(n); }
  void clear() { p_.reset(); }
  iterator erase(const_iterator first, const_iterator last) {
    const auto a = first - view().cbegin(), b = last - view().cbegin();  // before a copy
    std::vector<T>& v = mut();
    return v.erase(v.begin() + a, v.begin() + b);
  }

 private:
  static const std::vector<T>& empty_vector() {
    static const std::vector<T> none;
    return none;
  }
  std::shared_ptr<std::vector<T>> p_;
};

}  // namespace isim::trace
