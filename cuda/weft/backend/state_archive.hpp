#pragma once
/// @file state_archive.hpp
/// Saving and loading a stepper's state through one list of its fields: a
/// class's `state_fields(self, archive)` calls archive(name, member) for every
/// member that later steps depend on, and the same list serves StateSaver
/// (writes each member as a checkpoint block, weft/io/checkpoint.hpp) and
/// StateLoader (reads them back in place), so the two cannot drift apart.
/// Members: trivially copyable values, std::vector and thrust::device_vector
/// of them, and std::vector<std::vector<int>> (stored as offsets and values).
/// A member added after checkpoints were first written goes through
/// `optional(name, member)`: saved as any other, and on loading a checkpoint
/// of an earlier build that lacks its block, the member keeps the value the
/// stepper was constructed with (its state before any step), so such a
/// checkpoint still resumes.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <thrust/device_vector.h>

#include <weft/backend/vector_ops.hpp>

namespace weft {

/// Writes fields as blocks "PREFIX.NAME" of a checkpoint writer.
template <class Writer>
class StateSaver {
public:
    StateSaver(Writer& out, std::string prefix) : m_out(out), m_prefix(std::move(prefix)) {}
    StateSaver nested(const std::string& scope) const { return StateSaver(m_out, m_prefix + scope + "."); }

    template <typename T>
    void operator()(const char* name, const thrust::device_vector<T>& values)
    {
        m_out.put(m_prefix + name, to_host(values));
    }
    template <typename T>
    void operator()(const char* name, const std::vector<T>& values)
    {
        m_out.put(m_prefix + name, values);
    }
    void operator()(const char* name, const std::vector<std::vector<int>>& lists)
    {
        std::vector<std::int64_t> offsets{0};
        std::vector<int> flat;
        for (const std::vector<int>& list : lists) {
            flat.insert(flat.end(), list.begin(), list.end());
            offsets.push_back(static_cast<std::int64_t>(flat.size()));
        }
        m_out.put(m_prefix + name + ".offsets", offsets);
        m_out.put(m_prefix + name, flat);
    }
    template <typename T, typename = std::enable_if_t<std::is_trivially_copyable<T>::value>>
    void operator()(const char* name, const T& value)
    {
        m_out.put_value(m_prefix + name, value);
    }
    template <typename Field>
    void optional(const char* name, const Field& field)
    {
        (*this)(name, field);
    }

private:
    Writer& m_out;
    std::string m_prefix;
};

/// Reads the blocks that StateSaver wrote back into the same fields.
template <class Reader>
class StateLoader {
public:
    StateLoader(const Reader& in, std::string prefix) : m_in(in), m_prefix(std::move(prefix)) {}
    StateLoader nested(const std::string& scope) const { return StateLoader(m_in, m_prefix + scope + "."); }

    template <typename T>
    void operator()(const char* name, thrust::device_vector<T>& values)
    {
        const std::vector<T> host = m_in.template get<T>(m_prefix + name);
        values.assign(host.begin(), host.end());
    }
    template <typename T>
    void operator()(const char* name, std::vector<T>& values)
    {
        values = m_in.template get<T>(m_prefix + name);
    }
    void operator()(const char* name, std::vector<std::vector<int>>& lists)
    {
        const std::vector<std::int64_t> offsets = m_in.template get<std::int64_t>(m_prefix + name + ".offsets");
        const std::vector<int> flat = m_in.template get<int>(m_prefix + name);
        if (offsets.empty() || offsets.front() != 0 || offsets.back() != static_cast<std::int64_t>(flat.size()))
            m_in.fail("block \"" + m_prefix + name + "\" does not match its offsets");
        lists.assign(offsets.size() - 1, {});
        for (std::size_t k = 0; k + 1 < offsets.size(); ++k) {
            if (offsets[k + 1] < offsets[k]) m_in.fail("block \"" + m_prefix + name + ".offsets\" decreases");
            lists[k].assign(flat.begin() + offsets[k], flat.begin() + offsets[k + 1]);
        }
    }
    template <typename T, typename = std::enable_if_t<std::is_trivially_copyable<T>::value>>
    void operator()(const char* name, T& value)
    {
        value = m_in.template get_value<T>(m_prefix + name);
    }
    /// A member whose block an earlier build did not write: kept as it is
    /// when the block is absent (see the file comment).
    template <typename Field>
    void optional(const char* name, Field& field)
    {
        if (m_in.has(m_prefix + name)) (*this)(name, field);
    }

private:
    const Reader& m_in;
    std::string m_prefix;
};

}  // namespace weft
