#pragma once
/// @file checkpoint.hpp
/// Checkpoint files: named binary blocks behind a header and a checksum.
///
/// Layout (little-endian host byte order, as written):
///   "WEFTCKPT"                  8 bytes, the magic
///   version                     uint32 (checkpoint_version)
///   blocks, each:               uint32 name length, the name,
///                               uint64 byte count, the bytes
///   "WEFT-END"                  8 bytes
///   checksum                    uint64, FNV-1a of every byte before it
/// A reader checks magic, version, end marker and checksum before it hands
/// out a block, so a truncated or corrupted file is refused with the reason
/// and never half-read. What the blocks hold is up to the writer (weft-run:
/// the run loop's counters and the stepper's complete state, see
/// ImplicitStepper::save_state); a missing block or one of the wrong size is
/// refused naming the block. Writing goes to FILE.tmp, then a rename, so a
/// checkpoint on disk is always whole.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include <weft/core/error.hpp>

namespace weft {

/// The version this build writes and the only one it reads.
constexpr std::uint32_t checkpoint_version = 1;

namespace checkpoint_detail {

constexpr char magic[8] = {'W', 'E', 'F', 'T', 'C', 'K', 'P', 'T'};
constexpr char end_marker[8] = {'W', 'E', 'F', 'T', '-', 'E', 'N', 'D'};

/// FNV-1a, 64 bits, continued from `hash`.
inline std::uint64_t fnv1a(const unsigned char* data, std::size_t n, std::uint64_t hash = 1469598103934665603ull)
{
    for (std::size_t i = 0; i < n; ++i) {
        hash ^= data[i];
        hash *= 1099511628211ull;
    }
    return hash;
}

}  // namespace checkpoint_detail

/// FNV-1a of a file's bytes (e.g. the scene a checkpoint belongs to).
/// @throws InvalidInput when the file cannot be read
inline std::uint64_t file_fingerprint(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InvalidInput("\"" + path.string() + "\": cannot be read");
    const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return checkpoint_detail::fnv1a(bytes.data(), bytes.size());
}

/// Collects named blocks and writes them as one checkpoint file.
class CheckpointWriter {
public:
    /// A block of trivially copyable values.
    template <typename T>
    void put(const std::string& name, const std::vector<T>& values)
    {
        static_assert(std::is_trivially_copyable<T>::value, "checkpoint blocks hold trivially copyable values");
        put_bytes(name, values.data(), values.size() * sizeof(T));
    }
    /// A block of one trivially copyable value.
    template <typename T>
    void put_value(const std::string& name, const T& value)
    {
        static_assert(std::is_trivially_copyable<T>::value, "checkpoint blocks hold trivially copyable values");
        put_bytes(name, &value, sizeof(T));
    }
    void put_string(const std::string& name, const std::string& value) { put_bytes(name, value.data(), value.size()); }

    /// Writes `path` atomically: to path + ".tmp", then renamed over `path`.
    /// @throws std::runtime_error naming the file when it cannot be written
    void write(const std::filesystem::path& path) const
    {
        std::vector<unsigned char> bytes;
        append(bytes, checkpoint_detail::magic, sizeof checkpoint_detail::magic);
        append_value(bytes, checkpoint_version);
        for (const auto& block : m_blocks) {
            append_value(bytes, static_cast<std::uint32_t>(block.first.size()));
            append(bytes, block.first.data(), block.first.size());
            append_value(bytes, static_cast<std::uint64_t>(block.second.size()));
            append(bytes, block.second.data(), block.second.size());
        }
        append(bytes, checkpoint_detail::end_marker, sizeof checkpoint_detail::end_marker);
        append_value(bytes, checkpoint_detail::fnv1a(bytes.data(), bytes.size()));
        const std::filesystem::path tmp = path.string() + ".tmp";
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
            out.flush();
            if (!out) throw std::runtime_error("\"" + tmp.string() + "\": cannot write the checkpoint");
        }
        std::error_code ec;
        std::filesystem::rename(tmp, path, ec);
        if (ec)
            throw std::runtime_error("\"" + path.string() + "\": cannot rename the checkpoint into place (" +
                                     ec.message() + ")");
    }

private:
    void put_bytes(const std::string& name, const void* data, std::size_t n)
    {
        const auto* p = static_cast<const unsigned char*>(data);
        m_blocks.emplace_back(name, std::vector<unsigned char>(p, p + n));
    }
    static void append(std::vector<unsigned char>& out, const void* data, std::size_t n)
    {
        const auto* p = static_cast<const unsigned char*>(data);
        out.insert(out.end(), p, p + n);
    }
    template <typename T>
    static void append_value(std::vector<unsigned char>& out, const T& value)
    {
        append(out, &value, sizeof(T));
    }

    std::vector<std::pair<std::string, std::vector<unsigned char>>> m_blocks;
};

/// Reads a checkpoint file whole and checks it before any block is read.
class CheckpointReader {
public:
    /// @throws InvalidInput naming the file and the reason: unreadable, not a
    ///         weft checkpoint, another version, truncated or corrupted
    explicit CheckpointReader(const std::filesystem::path& path) : m_path(path)
    {
        std::ifstream in(path, std::ios::binary);
        if (!in) fail("cannot be read");
        parse(std::vector<unsigned char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    }

    /// The checkpoint in `bytes`; `name` stands for the file in messages.
    CheckpointReader(const std::vector<unsigned char>& bytes, const std::string& name) : m_path(name) { parse(bytes); }

    bool has(const std::string& name) const { return m_blocks.count(name) > 0; }

    /// A block of trivially copyable values; with `expected_count` ≥ 0 its
    /// length must be that many values.
    /// @throws InvalidInput naming the block when it is missing or of the wrong size
    template <typename T>
    std::vector<T> get(const std::string& name, long long expected_count = -1) const
    {
        static_assert(std::is_trivially_copyable<T>::value, "checkpoint blocks hold trivially copyable values");
        const std::vector<unsigned char>& bytes = block(name);
        if (bytes.size() % sizeof(T) != 0 ||
            (expected_count >= 0 && bytes.size() != static_cast<std::size_t>(expected_count) * sizeof(T)))
            fail("block \"" + name + "\" has " + std::to_string(bytes.size()) + " bytes, expected " +
                 (expected_count >= 0 ? std::to_string(static_cast<std::size_t>(expected_count) * sizeof(T))
                                      : "a multiple of " + std::to_string(sizeof(T))) +
                 " (a checkpoint of another model?)");
        std::vector<T> values(bytes.size() / sizeof(T));
        if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
        return values;
    }
    template <typename T>
    T get_value(const std::string& name) const
    {
        static_assert(std::is_trivially_copyable<T>::value, "checkpoint blocks hold trivially copyable values");
        const std::vector<unsigned char>& bytes = block(name);
        if (bytes.size() != sizeof(T))
            fail("block \"" + name + "\" has " + std::to_string(bytes.size()) + " bytes, expected " +
                 std::to_string(sizeof(T)) + " (a checkpoint of another model?)");
        T value;
        std::memcpy(&value, bytes.data(), sizeof(T));
        return value;
    }
    std::string get_string(const std::string& name) const
    {
        const std::vector<unsigned char>& bytes = block(name);
        return std::string(bytes.begin(), bytes.end());
    }

    const std::filesystem::path& path() const { return m_path; }

    /// @throws InvalidInput "checkpoint "PATH" " + what
    [[noreturn]] void fail(const std::string& what) const
    {
        throw InvalidInput("checkpoint \"" + m_path.string() + "\" " + what);
    }

private:
    void parse(const std::vector<unsigned char>& bytes)
    {
        const std::size_t head = sizeof checkpoint_detail::magic + sizeof(std::uint32_t);
        const std::size_t tail = sizeof checkpoint_detail::end_marker + sizeof(std::uint64_t);
        if (bytes.size() < sizeof checkpoint_detail::magic ||
            std::memcmp(bytes.data(), checkpoint_detail::magic, sizeof checkpoint_detail::magic) != 0)
            fail("is not a weft checkpoint (no WEFTCKPT header)");
        if (bytes.size() < head) fail("is truncated (" + std::to_string(bytes.size()) + " bytes)");
        std::uint32_t version = 0;
        std::memcpy(&version, bytes.data() + sizeof checkpoint_detail::magic, sizeof version);
        if (version != checkpoint_version)
            fail("has checkpoint version " + std::to_string(version) + "; this build reads version " +
                 std::to_string(checkpoint_version));
        if (bytes.size() < head + tail || std::memcmp(bytes.data() + bytes.size() - tail, checkpoint_detail::end_marker,
                                                      sizeof checkpoint_detail::end_marker) != 0)
            fail("is truncated (" + std::to_string(bytes.size()) + " bytes, no end marker)");
        std::uint64_t stored = 0;
        std::memcpy(&stored, bytes.data() + bytes.size() - sizeof stored, sizeof stored);
        if (checkpoint_detail::fnv1a(bytes.data(), bytes.size() - sizeof stored) != stored)
            fail("is corrupted (checksum mismatch)");
        std::size_t at = head;
        const std::size_t end = bytes.size() - tail;
        while (at < end) {
            std::uint32_t name_length = 0;
            std::uint64_t size = 0;
            if (end - at < sizeof name_length) fail("is corrupted (a block header runs past the end)");
            std::memcpy(&name_length, bytes.data() + at, sizeof name_length);
            at += sizeof name_length;
            if (end - at < name_length + sizeof size) fail("is corrupted (a block header runs past the end)");
            const std::string name(reinterpret_cast<const char*>(bytes.data() + at), name_length);
            at += name_length;
            std::memcpy(&size, bytes.data() + at, sizeof size);
            at += sizeof size;
            if (end - at < size) fail("is corrupted (block \"" + name + "\" runs past the end)");
            m_blocks[name].assign(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                                  bytes.begin() + static_cast<std::ptrdiff_t>(at + size));
            at += static_cast<std::size_t>(size);
        }
    }

    const std::vector<unsigned char>& block(const std::string& name) const
    {
        const auto it = m_blocks.find(name);
        if (it == m_blocks.end()) fail("has no block \"" + name + "\" (a checkpoint of another model?)");
        return it->second;
    }

    std::filesystem::path m_path;
    std::map<std::string, std::vector<unsigned char>> m_blocks;
};

}  // namespace weft
