namespace BoundedWork.Internal;

/// <summary>
/// When each queued item was admitted, by admission ticket: what the executor's statistics read the oldest queued
/// item's age from, without touching the item queue (a <see cref="System.Collections.Concurrent.ConcurrentQueue{T}"/>
/// peek would make its segment keep every item that passes through it alive, and stop it from being reused).
/// </summary>
/// <remarks>
/// <para>
/// A ring of (ticket, stamp) entries, ticket <c>t</c> at index <c>t mod length</c>. The producer that admitted ticket
/// <c>t</c> writes the stamp, then publishes <c>t + 1</c> as the entry's ticket (a release store); the hot path costs
/// two plain stores and no atomic operation. A reader accepts a stamp only if the entry held the same ticket before and after
/// it read the stamp, and that ticket is not older than the one it wanted. It can read a newer item's stamp only if the item it asked about was claimed meanwhile (a newer
/// item reuses the entry only once the queue has moved a whole ring's length on), which is the oldest item's age at
/// a slightly later instant.
/// </para>
/// <para>
/// The ring holds at least as many entries as the queue's capacity (up to <see cref="MaxLength"/>), so an entry is
/// never reused while its item is queued. Past that length, or for an item whose producer is between its admission
/// and its store, the age reads as a lower bound (the age of a newer item) or as zero (an item admitted just now).
/// The ring grows with the capacity; an item admitted while it grows may read as zero until it is claimed.
/// </para>
/// </remarks>
internal sealed class AdmissionStamps
{
    /// <summary>The longest ring: 65,536 entries (1 MiB).</summary>
    public const int MaxLength = 1 << 16;

    private const int MinLength = 16;

    private Entry[] _entries;

    public AdmissionStamps(int capacity) => _entries = new Entry[LengthFor(capacity)];

    /// <summary>Records when the item with this admission ticket was admitted (called once per ticket, by its producer).</summary>
    public void Record(long ticket, long stamp)
    {
        var entries = _entries;
        ref var entry = ref entries[ticket & (entries.Length - 1)];
        entry.Stamp = stamp;
        Volatile.Write(ref entry.Ticket, ticket + 1);
    }

    /// <summary>Reads when the item with this admission ticket was admitted; false if its producer has not recorded it yet.</summary>
    public bool TryRead(long ticket, out long stamp)
    {
        var entries = Volatile.Read(ref _entries);
        ref var entry = ref entries[ticket & (entries.Length - 1)];
        var before = Volatile.Read(ref entry.Ticket);
        stamp = Volatile.Read(ref entry.Stamp);
        var after = Volatile.Read(ref entry.Ticket);

        // Older than asked: not recorded yet (the item was admitted a moment ago). Newer: a later item's stamp, a
        // lower bound of the age (the queue is longer than the ring, or the item was claimed meanwhile).
        return before == after && before > ticket;
    }

    /// <summary>Makes the ring long enough for a new capacity. Called under the executor's lifecycle lock.</summary>
    public void EnsureCapacity(int capacity)
    {
        var old = _entries;
        var length = LengthFor(capacity);
        if (length <= old.Length)
        {
            return;
        }

        var grown = new Entry[length];
        for (var i = 0; i < old.Length; i++)
        {
            // Producers may be writing this entry: copy it only as read consistently, as a reader would.
            ref var entry = ref old[i];
            var ticket = Volatile.Read(ref entry.Ticket);
            var stamp = Volatile.Read(ref entry.Stamp);
            if (ticket > 0 && Volatile.Read(ref entry.Ticket) == ticket)
            {
                ref var copy = ref grown[(ticket - 1) & (length - 1)];
                copy.Stamp = stamp;
                copy.Ticket = ticket;
            }
        }

        Volatile.Write(ref _entries, grown);
    }

    private static int LengthFor(int capacity) =>
        capacity >= MaxLength ? MaxLength : Math.Max(MinLength, (int)System.Numerics.BitOperations.RoundUpToPowerOf2((uint)capacity));

    private struct Entry
    {
        /// <summary>The admission ticket plus one (0: never written).</summary>
        public long Ticket;

        public long Stamp;
    }
}
