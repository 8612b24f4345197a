using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The rows of the three claim statements, each read by its own named columns: <see cref="PlainClaimRow"/>
/// (<see cref="StorageSql.Claim"/>), <see cref="KeyedClaimRow"/> (<see cref="KeyedClaimSql.ClaimPerKey"/>) and
/// <see cref="HandOffRow"/> (<see cref="KeyedClaimSql.HandOff"/>). Every claimed row starts with the same eight columns;
/// what follows up to its delivery token is each statement's own. The two claims return a second row type in the same
/// result, their summary (<see cref="ClaimSummary"/>): flagged by a <c>summary</c> column, with columns of its own after
/// the item's (null in the claimed rows, as the item's are in the summary), so no column means two things. The item's
/// tenant comes last in every row (null in the summary), so that no earlier column moved when it was added.
/// </summary>
internal static class ClaimRows
{
    private const int Id = 0;
    private const int Payload = 1;
    private const int Attempts = 2;
    private const int AttemptBase = 3;
    private const int EnqueuedAt = 4;
    private const int Ordered = 5;
    private const int TraceParent = 6;
    private const int TraceState = 7;


    /// <summary>Reads a claimed row whose ordering key is at <paramref name="key"/>, delivery token at <paramref name="delivery"/> and tenant at <paramref name="tenant"/>.</summary>
    public static StoredItem ReadItem(IStoredItemOwner owner, NpgsqlDataReader reader, int key, int delivery, int tenant) =>
        new(owner, reader.GetInt64(Id), reader.GetString(Payload), reader.GetInt32(Attempts), reader.GetInt32(AttemptBase),
            reader.GetFieldValue<DateTimeOffset>(EnqueuedAt), reader.GetBoolean(Ordered),
            reader.IsDBNull(TraceParent) ? null : reader.GetString(TraceParent), reader.IsDBNull(TraceState) ? null : reader.GetString(TraceState),
            reader.IsDBNull(key) ? null : reader.GetString(key), reader.GetInt64(delivery))
        {
            Tenant = reader.IsDBNull(tenant) ? null : reader.GetString(tenant),
        };

    /// <summary>The seconds until the next scheduled item is due, from a summary's column (null: none).</summary>
    public static TimeSpan? NextDue(NpgsqlDataReader reader, int column) =>
        reader.IsDBNull(column) ? null : TimeSpan.FromSeconds(Math.Max(0, reader.GetDouble(column)));
}

/// <summary>
/// The plain claim's rows (<see cref="StorageSql.Claim"/>): a claimed item carries its place in the claim order
/// (priority, due time); its summary carries the promotions, the next due time, the settings version the claim saw, and
/// the ready items it left that the node wanted, with the oldest one's wait.
/// </summary>
internal sealed class PlainClaimRow : IClaimRows
{
    private const int Priority = 8;
    private const int RunAt = 9;
    private const int Key = 10;
    private const int Delivery = 11;
    private const int Summary = 12;
    private const int Promoted = 13;
    private const int NextDue = 14;
    private const int Version = 15;
    private const int Waiting = 16;
    private const int OldestWait = 17;
    private const int Tenant = 18;

    private PlainClaimRow()
    {
    }

    /// <summary>Gets a value indicating whether the row is the summary, not a claimed item.</summary>
    public static bool IsSummary(NpgsqlDataReader reader) => reader.GetBoolean(Summary);

    /// <summary>Reads a claimed item with its place in the claim order (the reserve starts them in it).</summary>
    public static StoredItem ReadItem(IStoredItemOwner owner, NpgsqlDataReader reader) => ReadItem(owner, reader, Tenant);

    /// <summary>Reads a claimed item with its place in the claim order, its tenant at <paramref name="tenant"/> (a statement with more summary columns).</summary>
    public static StoredItem ReadItem(IStoredItemOwner owner, NpgsqlDataReader reader, int tenant)
    {
        var item = ClaimRows.ReadItem(owner, reader, Key, Delivery, tenant);
        item.Priority = reader.GetInt16(Priority);
        item.RunAt = reader.GetFieldValue<DateTimeOffset>(RunAt);
        return item;
    }

    /// <summary>Reads the summary.</summary>
    public static ClaimSummary ReadSummary(NpgsqlDataReader reader) => new(reader.GetInt32(Promoted), ClaimRows.NextDue(reader, NextDue))
    {
        Version = reader.GetInt64(Version),
        Waiting = reader.GetInt64(Waiting),
        OldestWaitSeconds = reader.GetDouble(OldestWait),
    };
}

/// <summary>
/// The rows of the plain claim that carries outcomes (<see cref="StorageSql.ClaimCarrying"/>): the plain claim's, and one
/// more summary column, how many of the carried outcomes landed (<see cref="ClaimSummary.Recorded"/>).
/// </summary>
internal sealed class CarryingClaimRow : IClaimRows
{
    private const int Recorded = 18;
    private const int Tenant = 19;

    private CarryingClaimRow()
    {
    }

    /// <summary>Gets a value indicating whether the row is the summary, not a claimed item.</summary>
    public static bool IsSummary(NpgsqlDataReader reader) => PlainClaimRow.IsSummary(reader);

    /// <summary>Reads a claimed item, as the plain claim's (its tenant after the summary's columns).</summary>
    public static StoredItem ReadItem(IStoredItemOwner owner, NpgsqlDataReader reader) => PlainClaimRow.ReadItem(owner, reader, Tenant);

    /// <summary>Reads the summary, with the outcomes that landed.</summary>
    public static ClaimSummary ReadSummary(NpgsqlDataReader reader) => PlainClaimRow.ReadSummary(reader) with { Recorded = reader.GetInt64(Recorded) };
}

/// <summary>
/// The per-key claim's rows (<see cref="KeyedClaimSql.ClaimPerKey"/>): its summary carries the promotions, the next
/// due time, the ready items the per-key rule held back that the node wanted, with the oldest one's wait, and the
/// settings version the claim saw.
/// </summary>
internal sealed class KeyedClaimRow : IClaimRows
{
    private const int Key = 8;
    private const int Delivery = 9;
    private const int Summary = 10;
    private const int Promoted = 11;
    private const int NextDue = 12;
    private const int HeldBack = 13;
    private const int OldestHeldBack = 14;
    private const int Version = 15;
    private const int Tenant = 16;

    private KeyedClaimRow()
    {
    }

    /// <summary>Gets a value indicating whether the row is the summary, not a claimed item.</summary>
    public static bool IsSummary(NpgsqlDataReader reader) => reader.GetBoolean(Summary);

    /// <summary>Reads a claimed item.</summary>
    public static StoredItem ReadItem(IStoredItemOwner owner, NpgsqlDataReader reader) => ClaimRows.ReadItem(owner, reader, Key, Delivery, Tenant);

    /// <summary>Reads the summary.</summary>
    public static ClaimSummary ReadSummary(NpgsqlDataReader reader) => new(reader.GetInt32(Promoted), ClaimRows.NextDue(reader, NextDue))
    {
        HeldByKey = reader.GetInt64(HeldBack),
        OldestHeldByKeySeconds = reader.GetDouble(OldestHeldBack),
        Version = reader.GetInt64(Version),
    };
}

/// <summary>The hand-off's rows (<see cref="KeyedClaimSql.HandOff"/>): claimed items only, each saying whether it is prefetched (I3).</summary>
internal static class HandOffRow
{
    private const int Key = 8;
    private const int Prefetched = 9;
    private const int Delivery = 10;
    private const int Tenant = 11;

    /// <summary>Reads a claimed item, and whether it is its key's prefetched item (count M, not to start now).</summary>
    public static StoredItem ReadItem(IStoredItemOwner owner, NpgsqlDataReader reader)
    {
        var item = ClaimRows.ReadItem(owner, reader, Key, Delivery, Tenant);
        item.Prefetched = reader.GetBoolean(Prefetched);
        return item;
    }
}

/// <summary>
/// What one claim did and saw: what its statement's summary row says (scheduled items it made ready, the time until the
/// next scheduled item is due, the settings version it saw, and (the plain claim) the items it left waiting, or (the
/// per-key claim) the items the per-key rule held back), and, once the claim loop has handed its rows to the node, how
/// many items it claimed of how many its permits let it ask for.
/// </summary>
internal readonly record struct ClaimSummary(int Promoted, TimeSpan? NextDue)
{
    /// <summary>Gets the items the claim took that the node held and started or reserved (set by the claim loop).</summary>
    public int Claimed { get; init; }

    /// <summary>Gets how many items the claim asked for under the node's permits (zero: it claimed under a stale grant, or none; set by the claim loop).</summary>
    public int Requested { get; init; }

    /// <summary>Gets the settings version the claim saw (null: no summary was read).</summary>
    public long? Version { get; init; }

    /// <summary>Gets how many of the outcomes the claim carried in its statement landed (<see cref="CarryingClaimRow"/>; zero otherwise).</summary>
    public long Recorded { get; init; }

    /// <summary>Gets the ready items the plain claim left that the node wanted.</summary>
    public long Waiting { get; init; }

    /// <summary>Gets how long the oldest of <see cref="Waiting"/> has waited since it became due, in seconds.</summary>
    public double OldestWaitSeconds { get; init; }

    /// <summary>Gets the ready items the per-key rule held back that the node wanted.</summary>
    public long HeldByKey { get; init; }

    /// <summary>Gets how long the oldest of <see cref="HeldByKey"/> has waited since it became due, in seconds.</summary>
    public double OldestHeldByKeySeconds { get; init; }

    /// <summary>Gets a value indicating whether the fair claim took fewer than it asked for while a tenant offered no more than its quota of a longer backlog (claim again at once).</summary>
    public bool More { get; init; }
}

/// <summary>The fair claim's rows (<see cref="FairClaimSql.Claim"/>): the plain claim's, and one more summary column, <c>more</c>.</summary>
internal sealed class FairClaimRow : IClaimRows
{
    private const int More = 18;
    private const int Tenant = 19;

    private FairClaimRow()
    {
    }

    /// <summary>Gets a value indicating whether the row is the summary, not a claimed item.</summary>
    public static bool IsSummary(NpgsqlDataReader reader) => PlainClaimRow.IsSummary(reader);

    /// <summary>Reads a claimed item with its place in the claim order.</summary>
    public static StoredItem ReadItem(IStoredItemOwner owner, NpgsqlDataReader reader) => PlainClaimRow.ReadItem(owner, reader, Tenant);

    /// <summary>Reads the summary.</summary>
    public static ClaimSummary ReadSummary(NpgsqlDataReader reader) => PlainClaimRow.ReadSummary(reader) with { More = !reader.IsDBNull(More) && reader.GetBoolean(More) };
}
