using System.Net.Sockets;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The life of the local socket's file: created readable and writable by the app's own user only; only a stale socket
/// (one nobody listens on) is ever replaced, never a file, a directory or a link; at stop, deleted only if it is still
/// the one created here (same <see cref="SocketFile"/> identity).
/// </summary>
internal sealed class LocalSocketFile
{
    private readonly SocketFile _created;

    private LocalSocketFile(string path, SocketFile created)
    {
        Path = path;
        _created = created;
    }

    /// <summary>Gets the full path of the socket file.</summary>
    public string Path { get; }

    /// <summary>Creates the socket file at <paramref name="path"/> and returns it with its listening socket.</summary>
    /// <exception cref="InvalidOperationException">The path cannot be used; the message says why and what to change.</exception>
    public static (LocalSocketFile File, Socket Listener) Create(string path)
    {
        var listener = Bind(path);
        return (new LocalSocketFile(path, SocketFile.Inspect(path)), listener);
    }

    /// <summary>Deletes the socket file if it is still the one created here.</summary>
    public void DeleteIfOurs()
    {
        var now = SocketFile.Inspect(Path);
        if (now.Kind == SocketFileKind.Socket && now == _created)
        {
            try
            {
                File.Delete(Path);
            }
            catch (IOException)
            {
                // Best effort: a stale socket is replaced at the next start.
            }
        }
    }

    private static Socket Bind(string path)
    {
        var folder = System.IO.Path.GetDirectoryName(path);
        if (folder is not null && !Directory.Exists(folder))
        {
            throw new InvalidOperationException(
                $"The admin console's local socket '{path}' cannot be created: the folder '{folder}' does not exist. Create it (readable by the app's user only), or set BoundedWorkAdminOptions.LocalSocketPath to a path in an existing folder.");
        }

        var existing = SocketFile.Inspect(path);
        if (existing.Kind == SocketFileKind.Socket)
        {
            if (IsListening(path))
            {
                throw new InvalidOperationException(
                    $"The admin console's local socket '{path}' is in use by another process; set BoundedWorkAdminOptions.LocalSocketPath to a path of this instance's own.");
            }

            File.Delete(path); // a stale socket left by a process that did not stop cleanly
        }
        else if (existing.Kind != SocketFileKind.None)
        {
            throw new InvalidOperationException(
                $"The admin console's local socket '{path}' cannot be created: {existing.Describe()} is already there, and only a stale socket is ever replaced. Remove it, or set BoundedWorkAdminOptions.LocalSocketPath to another path.");
        }

        UnixDomainSocketEndPoint endPoint;
        try
        {
            endPoint = new UnixDomainSocketEndPoint(path);
        }
        catch (ArgumentException e)
        {
            throw new InvalidOperationException($"The admin console's local socket path '{path}' is not usable: {e.Message} Choose a shorter path.", e);
        }

        var listener = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        try
        {
            // Bound through an endpoint the runtime does not track, or disposing the listener would delete whatever is
            // at the path by then; DeleteIfOurs decides.
            listener.Bind(new UntrackedEndPoint(endPoint));
            if (!OperatingSystem.IsWindows())
            {
                File.SetUnixFileMode(path, UnixFileMode.UserRead | UnixFileMode.UserWrite);
            }

            listener.Listen(64);
            return listener;
        }
        catch (Exception e) when (e is SocketException or IOException or UnauthorizedAccessException)
        {
            listener.Dispose();
            throw new InvalidOperationException($"The admin console's local socket '{path}' cannot be created: {e.Message}", e);
        }
    }

    private static bool IsListening(string path)
    {
        try
        {
            using var probe = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
            probe.Connect(new UnixDomainSocketEndPoint(path));
            return true;
        }
        catch (SocketException)
        {
            return false;
        }
    }
}

/// <summary>
/// A Unix domain socket address the runtime does not remember as bound: a listener bound to a
/// <see cref="UnixDomainSocketEndPoint"/> deletes the file at its path when disposed, whatever is there by then.
/// </summary>
internal sealed class UntrackedEndPoint(UnixDomainSocketEndPoint inner) : System.Net.EndPoint
{
    public override AddressFamily AddressFamily => AddressFamily.Unix;

    public override System.Net.SocketAddress Serialize() => inner.Serialize();

    public override System.Net.EndPoint Create(System.Net.SocketAddress socketAddress) => inner.Create(socketAddress);

    public override string ToString() => inner.ToString();
}
