using System.Globalization;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The notification listener: on its own thread, it holds one unpooled connection that listens on the schema's three
/// channels (wake-ups, cancellation requests, settings changes) and tells the node those meant for its queue. After
/// every (re)connection it asks the node to look once (<see cref="INotificationListenerHost.Listening"/>): notifications
/// sent while it was not listening are lost. See docs/durable-invariants.md, I8.
/// </summary>
/// <remarks>
/// <b>State.</b> None beyond its thread and its connection (opened and disposed by <see cref="Run"/>).
/// <b>Lock.</b> None: notifications are raised on its own thread, and the node's handlers take their own locks.
/// </remarks>
internal sealed class NotificationListener(INotificationListenerHost host, NpgsqlDataSource source, StorageSql sql, string queue)
{
    /// <summary>The loop's name in the storage health and its log events.</summary>
    public const string LoopName = "listening";

    /// <summary>How often the listening thread looks at its token while no notification arrives.</summary>
    private static readonly TimeSpan CheckInterval = TimeSpan.FromMilliseconds(250);

    /// <summary>Listens on the calling thread until <paramref name="cancellationToken"/> fires, reconnecting after a failure.</summary>
    public void Run(CancellationToken cancellationToken)
    {
        var failureDelay = TimeSpan.FromMilliseconds(100);
        while (!cancellationToken.IsCancellationRequested)
        {
            try
            {
                using var connection = source.OpenConnection();
                InlineSocketCompletions.TryEnable(connection); // it waits synchronously, on this thread
                connection.Notification += (_, notification) => OnNotification(notification.Channel, notification.Payload);
                foreach (var channel in (string[])[sql.NotifyChannel, sql.CancelChannel, sql.SettingsChannel])
                {
                    using var listen = new NpgsqlCommand(StorageSql.Listen(channel), connection);
                    listen.ExecuteNonQuery();
                }

                host.Succeeded(LoopName);
                failureDelay = TimeSpan.FromMilliseconds(100);

                // Notifications sent while this node was not listening are lost: look once (for items, and for a
                // settings change).
                host.Listening();
                while (!cancellationToken.IsCancellationRequested)
                {
                    // Raises Notification on this thread; returns false at the timeout, to look at the token.
                    connection.Wait(CheckInterval);
                }
            }
            catch (Exception ex)
            {
                failureDelay = host.Failed(LoopName, ex, failureDelay, cancellationToken);
            }
        }
    }

    /// <summary>Handles a notification of this schema's channels on the listening thread: a wake-up for this queue, a cancellation request for an item of it (<c>id:queue</c>), or a settings change.</summary>
    private void OnNotification(string channel, string payload)
    {
        if (string.Equals(channel, sql.NotifyChannel, StringComparison.Ordinal))
        {
            if (string.Equals(payload, queue, StringComparison.Ordinal))
            {
                host.Wake();
            }
        }
        else if (string.Equals(channel, sql.CancelChannel, StringComparison.Ordinal)
            && payload.IndexOf(':', StringComparison.Ordinal) is var colon and > 0
            && payload.AsSpan(colon + 1).SequenceEqual(queue)
            && long.TryParse(payload.AsSpan(0, colon), NumberStyles.None, CultureInfo.InvariantCulture, out var id))
        {
            host.CancellationRequested(id);
        }
        else if (string.Equals(channel, sql.SettingsChannel, StringComparison.Ordinal))
        {
            host.SettingsChanged(payload);
        }
    }
}

/// <summary>What the notification listener tells the node it listens for.</summary>
internal interface INotificationListenerHost
{
    /// <summary>The listener is (again) listening: look once for items and for a settings change.</summary>
    void Listening();

    /// <summary>An item of this queue became ready: wake the claim loop.</summary>
    void Wake();

    /// <summary>The cancellation of the item <paramref name="id"/> of this queue was asked.</summary>
    void CancellationRequested(long id);

    /// <summary>The schema's queue settings changed (<paramref name="payload"/>: the notification's text).</summary>
    void SettingsChanged(string payload);

    /// <summary>The loop's storage work succeeded (a recovery is logged).</summary>
    void Succeeded(string loop);

    /// <summary>The loop's storage work failed: reports it and waits; returns the next delay.</summary>
    TimeSpan Failed(string loop, Exception error, TimeSpan delay, CancellationToken cancellationToken);
}
