using System.Text.Json;
using System.Text.Json.Serialization;

namespace BoundedWork.AspNetCore.Internal;

// The dead-letter documents. Field names are camelCase and stable, as for every console document.

/// <summary>GET {prefix}/queues/{name}/dead-letters: a page, the most recent first, and the cursor of the next one.</summary>
internal sealed record DeadLetterListResponse(string Queue, IReadOnlyList<DeadLetterSummary> Items, string? NextCursor);

/// <summary>A dead letter in a list: no payload.</summary>
internal sealed record DeadLetterSummary(
    long Id,
    int Attempts,
    string? LastError,
    DateTimeOffset EnqueuedAt,
    DateTimeOffset DeadAt,
    int Priority,
    string? OrderingKey,
    string? TraceParent);

/// <summary>
/// GET {prefix}/queues/{name}/dead-letters/{id}: the dead letter with its payload as JSON (<c>payload</c>), or, when the
/// payload is longer than the console shows, its beginning as text (<c>payloadText</c>, <c>payloadTruncated</c>).
/// </summary>
internal sealed record DeadLetterResponse(
    string Queue,
    long Id,
    int Attempts,
    string? LastError,
    DateTimeOffset EnqueuedAt,
    DateTimeOffset DeadAt,
    int Priority,
    string? OrderingKey,
    string? TraceParent,
    string? TraceState,
    JsonElement? Payload,
    int PayloadLength,
    bool PayloadTruncated,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] string? PayloadText);

/// <summary>A requeue or purge: what was asked (<c>selection</c>, as the log line says it) and how many dead letters it took.</summary>
internal sealed record DeadLetterChangeResponse(string Queue, string Operation, string Selection, int Count);
