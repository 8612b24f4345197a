using System.Runtime.InteropServices;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>What is at a path, without following a symbolic link there.</summary>
internal enum SocketFileKind
{
    /// <summary>Nothing: the path is free.</summary>
    None,

    /// <summary>A Unix domain socket.</summary>
    Socket,

    /// <summary>A regular file.</summary>
    RegularFile,

    /// <summary>A directory.</summary>
    Directory,

    /// <summary>A symbolic link (never followed).</summary>
    SymbolicLink,

    /// <summary>Something else (a FIFO, a device), or a kind this platform cannot tell.</summary>
    Other,
}

/// <summary>
/// The identity of a file system entry as <c>lstat</c> sees it: its kind, owner, permissions and change time. The
/// socket listener uses it to replace only a stale socket (never a file, a directory or a link), to delete at
/// shutdown only the socket it created (same change time), and to accept only a private folder for the per-process
/// diagnostics sockets. The BCL exposes none of these, so on Unix they are read through the runtime's own native
/// shim (<c>SystemNative_LStat</c>, whose leading fields are stable); where that cannot be called, the kind is
/// <see cref="SocketFileKind.Other"/> and callers refuse to touch the entry.
/// </summary>
internal readonly record struct SocketFile(SocketFileKind Kind, uint OwnerId, int Permissions, long ChangeTime, long ChangeTimeNanoseconds)
{
    private const int FileTypeMask = 0xF000;
    private const int SocketType = 0xC000;
    private const int RegularType = 0x8000;
    private const int DirectoryType = 0x4000;
    private const int LinkType = 0xA000;

    /// <summary>Gets the user id of this process on Unix, or <see langword="null"/> where it cannot be read.</summary>
    public static uint? CurrentUserId
    {
        get
        {
            if (OperatingSystem.IsWindows())
            {
                return null;
            }

            try
            {
                return SocketFileNative.GetEUid();
            }
            catch (Exception e) when (e is DllNotFoundException or EntryPointNotFoundException)
            {
                return null;
            }
        }
    }

    /// <summary>Reads what is at <paramref name="path"/> without following a link.</summary>
    public static SocketFile Inspect(string path)
    {
        if (OperatingSystem.IsWindows())
        {
            return InspectWindows(path);
        }

        // The runtime's FileStatus: Flags, Mode, Uid, Gid (4 bytes each), Size, ATime, ATimeNsec, MTime, MTimeNsec,
        // CTime, CTimeNsec (8 bytes each), then fields that have moved between versions and are not read here.
        Span<byte> status = stackalloc byte[512];
        int result;
        try
        {
            result = SocketFileNative.LStat(path, ref MemoryMarshal.GetReference(status));
        }
        catch (Exception e) when (e is DllNotFoundException or EntryPointNotFoundException)
        {
            return File.Exists(path) || Directory.Exists(path) || new FileInfo(path).LinkTarget is not null
                ? new SocketFile(SocketFileKind.Other, 0, 0, 0, 0)
                : default;
        }

        if (result != 0)
        {
            return default; // nothing there (or not reachable, which the bind that follows reports with the path)
        }

        var mode = BitConverter.ToInt32(status[4..8]);
        var kind = (mode & FileTypeMask) switch
        {
            SocketType => SocketFileKind.Socket,
            RegularType => SocketFileKind.RegularFile,
            DirectoryType => SocketFileKind.Directory,
            LinkType => SocketFileKind.SymbolicLink,
            _ => SocketFileKind.Other,
        };
        return new SocketFile(kind, BitConverter.ToUInt32(status[8..12]), mode & 0x1FF, BitConverter.ToInt64(status[56..64]), BitConverter.ToInt64(status[64..72]));
    }

    /// <summary>Describes the kind for a message: "a regular file", "a directory", ...</summary>
    public string Describe() => Kind switch
    {
        SocketFileKind.Socket => "a socket",
        SocketFileKind.RegularFile => "a regular file",
        SocketFileKind.Directory => "a directory",
        SocketFileKind.SymbolicLink => "a symbolic link",
        SocketFileKind.None => "nothing",
        _ => "a file that is not a socket",
    };

    private static SocketFile InspectWindows(string path)
    {
        var info = new FileInfo(path);
        if (!info.Exists && !Directory.Exists(path))
        {
            return default;
        }

        var attributes = File.GetAttributes(path);
        if (info.LinkTarget is not null)
        {
            return new SocketFile(SocketFileKind.SymbolicLink, 0, 0, 0, 0);
        }

        if (attributes.HasFlag(FileAttributes.Directory))
        {
            return new SocketFile(SocketFileKind.Directory, 0, 0, 0, 0);
        }

        // An AF_UNIX socket on Windows is a reparse point that is not a link.
        var kind = attributes.HasFlag(FileAttributes.ReparsePoint) ? SocketFileKind.Socket : SocketFileKind.RegularFile;
        return new SocketFile(kind, 0, 0, info.LastWriteTimeUtc.Ticks, 0);
    }
}

/// <summary>The runtime's native shim for the file status calls the BCL does not expose.</summary>
internal static partial class SocketFileNative
{
    [LibraryImport("libSystem.Native", EntryPoint = "SystemNative_LStat", StringMarshalling = StringMarshalling.Utf8)]
    public static partial int LStat(string path, ref byte status);

    [LibraryImport("libSystem.Native", EntryPoint = "SystemNative_GetEUid")]
    public static partial uint GetEUid();
}
