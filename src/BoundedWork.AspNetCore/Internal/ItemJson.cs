using System.Text.Encodings.Web;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace BoundedWork.AspNetCore.Internal;

// The stored-item documents. Field names are camelCase and stable, as for every console document.

/// <summary>GET {prefix}/queues/{name}/items: a page of one state's items, the cursor of the next one, and how many stored items the page examined.</summary>
internal sealed record ItemListResponse(string Queue, string State, IReadOnlyList<ItemSummary> Items, string? NextCursor, int Examined);

/// <summary>A stored item in a list: no payload.</summary>
internal sealed record ItemSummary(
    long Id,
    string State,
    int Attempts,
    int Priority,
    string? OrderingKey,
    DateTimeOffset EnqueuedAt,
    DateTimeOffset RunAt,
    DateTimeOffset? FinishedAt,
    string? LastError);

/// <summary>POST {prefix}/queues/{name}/items/preview: how many items the action would touch now, and the token that applies it.</summary>
internal sealed record ItemPreviewResponse(string Queue, string Action, string Selection, bool WholeState, int Count, string ConfirmToken);

/// <summary>POST {prefix}/queues/{name}/items/apply: what the action did.</summary>
internal sealed record ItemActionResponse(string Queue, string Action, string Selection, int Applied, int Skipped, bool StoppedAtConfirmedCount);

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[JsonSerializable(typeof(ItemListResponse))]
[JsonSerializable(typeof(ItemPreviewResponse))]
[JsonSerializable(typeof(ItemActionResponse))]
internal sealed partial class ItemJsonContext : JsonSerializerContext
{
    /// <summary>Gets the context with relaxed escaping (the console's documents are JSON for tools, not HTML).</summary>
    public static ItemJsonContext Readable { get; } = new(new JsonSerializerOptions(JsonSerializerDefaults.Web) { Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping });
}
