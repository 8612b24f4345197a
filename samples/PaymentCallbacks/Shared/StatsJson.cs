using System.Text.Json;
using System.Text.Json.Serialization;

namespace PaymentCallbacks.Shared;

/// <summary>Source-generated JSON for the stats the server writes and the clients read.</summary>
[JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[JsonSerializable(typeof(ServerStats))]
[JsonSerializable(typeof(LoadReport))]
[JsonSerializable(typeof(ReplayReport))]
internal sealed partial class StatsJson : JsonSerializerContext;
