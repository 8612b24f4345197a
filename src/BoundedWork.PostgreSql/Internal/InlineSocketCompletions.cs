using System.Diagnostics.CodeAnalysis;
using System.Net.Sockets;
using System.Reflection;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Makes the socket of a connection that the queue's own threads use only synchronously complete its I/O on the
/// runtime's socket thread, never through the ThreadPool, so that those threads go on while the pool is starved.
/// </summary>
/// <remarks>
/// <para>
/// Npgsql puts every socket into non-blocking mode when it connects (for the connect timeout), and on Linux and macOS
/// the runtime never returns a socket to blocking mode: a synchronous read afterwards waits on an event that the
/// runtime's epoll thread sets when data arrives. That thread decides whether the next operation on the socket is
/// synchronous by a speculative read of a flag; when it reads a stale value (its source says: "due to a race, old
/// caches, etc."), it hands the wake-up to the ThreadPool instead, and under a starved pool the synchronous read then
/// waits until the command timeout. With the socket's inline completions on, the epoll thread handles every event of
/// the socket itself.
/// </para>
/// <para>
/// Only for connections used synchronously: an asynchronous continuation on such a socket would run on the epoll
/// thread. Both the switch (<c>Socket.PreferInlineCompletions</c>, kept by the runtime for reflection) and the way to
/// the socket (Npgsql's connector) are not public; when either is missing, nothing changes and <see cref="IsAvailable"/>
/// says so.
/// </para>
/// </remarks>
internal static class InlineSocketCompletions
{
    private static readonly PropertyInfo? s_connector = typeof(NpgsqlConnection).GetProperty("Connector", BindingFlags.Instance | BindingFlags.NonPublic);
    private static readonly FieldInfo? s_socket = FindSocketField(s_connector);
    private static readonly PropertyInfo? s_preferInline = typeof(Socket).GetProperty("PreferInlineCompletions", BindingFlags.Instance | BindingFlags.NonPublic);

    /// <summary>Gets a value indicating whether this runtime and this Npgsql let the switch be set.</summary>
    public static bool IsAvailable =>
        !OperatingSystem.IsWindows() && s_connector is not null && s_socket?.FieldType == typeof(Socket) && s_preferInline is { CanWrite: true };

    /// <summary>Turns inline completions on for the connection's socket; false when it cannot (see <see cref="IsAvailable"/>).</summary>
    public static bool TryEnable(NpgsqlConnection connection)
    {
        if (!IsAvailable || SocketOf(connection) is not { } socket)
        {
            return false;
        }

        try
        {
            s_preferInline!.SetValue(socket, true);
            return true;
        }
        catch (Exception ex) when (ex is TargetInvocationException or ArgumentException or MethodAccessException)
        {
            return false;
        }
    }

    /// <summary>Gets whether the connection's socket completes inline (for tests); null when it cannot be read.</summary>
    /// <remarks>The socket's own getter is trimmed from the runtime; its handle holds the value.</remarks>
    public static bool? IsEnabled(NpgsqlConnection connection) =>
        IsAvailable && SocketOf(connection) is { } socket
            && typeof(SafeSocketHandle).GetProperty("PreferInlineCompletions", BindingFlags.Instance | BindingFlags.NonPublic) is { CanRead: true } read
            ? (bool?)read.GetValue(socket.SafeHandle)
            : null;

    [UnconditionalSuppressMessage("Trimming", "IL2075", Justification = "Optional: when the field is trimmed away or renamed, nothing changes (IsAvailable is false).")]
    private static FieldInfo? FindSocketField(PropertyInfo? connector) =>
        connector?.PropertyType.GetField("_socket", BindingFlags.Instance | BindingFlags.NonPublic);

    private static Socket? SocketOf(NpgsqlConnection connection)
    {
        try
        {
            return s_connector!.GetValue(connection) is { } connector ? s_socket!.GetValue(connector) as Socket : null;
        }
        catch (Exception ex) when (ex is TargetInvocationException or ArgumentException or MethodAccessException)
        {
            return null;
        }
    }
}
